// What an operator's Prometheus sees of a replica whose pod list keeps failing, on the real
// control plane behind a fault proxy: /readyz's checks as finalizer_sweeper_ready{check}, and
// each failed list in finalizer_sweeper_list_watch_failures_total, until the list works again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFaultProxy } from '../../src/testbed/fault-proxy.ts';
import { startCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricsPortOf, sample, scrape } from '../support/scrape.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

test('a pod list that keeps failing shows as ready{check="caches-synced"} 0 and counted list failures; once it works, ready 1', { timeout: 120_000 }, async (t) => {
  const ns = await newNamespace(t);
  let failing = true;
  const timeout = { status: 504, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Timeout', code: 504, message: 'the list timed out' } };
  const proxy = await startFaultProxy({
    kubeconfigPath,
    path: join(tmpdir(), `readiness-${randomBytes(3).toString('hex')}.kubeconfig`),
    fault: (req) => (failing && req.method === 'GET' && req.url?.startsWith(`/api/v1/namespaces/${ns}/pods?`) ? timeout : null),
  });
  t.after(() => proxy.close());
  const p = startCli(
    ['controller', '--kubeconfig', proxy.kubeconfigPath, '--namespace', ns, '--leader-elect=false', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0', '--log-format', 'json'],
    { timeoutMs: 110_000 },
  );
  t.after(() => p.child.kill('SIGKILL'));
  const port = await metricsPortOf(p);
  const failures = (text: string) => sample(text, 'finalizer_sweeper_list_watch_failures_total{resource="pods",attempt="list",code="504"}') ?? 0;

  await cluster.waitFor(async () => failures(await scrape(port)) >= 3, 60_000, 'three failed pod lists counted');
  const while504 = await scrape(port);
  assert.equal(sample(while504, 'finalizer_sweeper_ready{check="caches-synced"}'), 0);
  assert.equal(sample(while504, 'finalizer_sweeper_ready{check="watches"}'), 0);
  assert.equal(sample(while504, 'finalizer_sweeper_ready{check="owner-settings"}'), 1);
  assert.equal(sample(while504, 'finalizer_sweeper_ready{check="owner-resource"}'), 1);

  failing = false;
  await cluster.waitFor(async () => sample(await scrape(port), 'finalizer_sweeper_ready{check="caches-synced"}') === 1, 60_000, 'the caches to sync');
  const after = await scrape(port);
  assert.equal(sample(after, 'finalizer_sweeper_ready{check="watches"}'), 1, 'a completed list is a sign of life');
});
