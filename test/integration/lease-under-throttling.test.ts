// Throttling never costs the Lease. Every pod patch of the controller is answered 429 with
// Retry-After: 5 by a proxy in front of the API server: each throttled spell pauses the API
// budget for 5 s, longer than the 3 s renew deadline used here. The Lease is renewed through a
// client of its own, outside the budget, so the leader keeps leading through the whole storm.
// Before that, the pause held the renewals and the leader stepped down within the first spell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useTestCluster } from '../support/cluster.ts';
import { startCli } from '../support/cli.ts';
import { startFaultProxy, tooManyRequests } from '../../src/testbed/fault-proxy.ts';
import { ARGO_FINALIZER, newPod, newWorkflow } from '../../src/testbed/fixtures.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LEASE = ['--leader-election-lease-duration', '4s', '--leader-election-renew-deadline', '3s', '--leader-election-retry-period', '500ms'];

test('a leader keeps its Lease through a 429 storm on its pod patches', { timeout: 180_000 }, async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'done', completed: true }));
  const owner = { name: 'done', uid: wf.metadata.uid as string };
  await cluster.createPods(Array.from({ length: 16 }, (_, i) => newPod({ namespace: ns, name: `done-${i}`, workflow: owner, completed: true, finalizers: [ARGO_FINALIZER] })));

  const patchesOfPods = `/api/v1/namespaces/${ns}/pods/`;
  const proxy = await startFaultProxy({
    kubeconfigPath,
    context: 'finalizer-sweeper-test',
    path: join(tmpdir(), `storm-${randomBytes(3).toString('hex')}.kubeconfig`),
    fault: (req) => (req.method === 'PATCH' && req.url?.startsWith(patchesOfPods) ? tooManyRequests(5) : null),
  });
  t.after(() => proxy.close());
  const id = `sweeper-${randomBytes(3).toString('hex')}`;
  const p = startCli(['controller', '--kubeconfig', proxy.kubeconfigPath, '--namespace', ns, '--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', id, ...LEASE, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--log-format', 'json']);
  t.after(() => p.child.kill('SIGKILL'));
  await p.untilStderr((l) => l.includes('"became the leader"'));

  // Spell after spell of 429s: the concurrency bound soon falls to 1, and each 429 pauses the
  // budget for 5 s, beyond the renew deadline. Eight of them span three pauses at least.
  await cluster.waitFor(async () => proxy.faults >= 8, 120_000, 'eight throttled patches');
  const renewTime = async () => ((await cluster.client.call('GET', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${id}`)) as { spec: { renewTime: string } }).spec.renewTime;
  const renewed = await renewTime();
  await cluster.waitFor(async () => (await renewTime()) !== renewed, 30_000, 'one more renewal');

  assert.equal(p.stderr().includes('"stopped leading"'), false, 'the leader never stepped down');
  assert.equal(p.stderr().split('\n').filter((l) => l.includes('"became the leader"')).length, 1);
  p.child.kill('SIGTERM');
  assert.equal((await p.result).code, 0);
});
