// Running it in production: two replicas with leader election (handover on SIGTERM and on
// SIGKILL, nothing lost), a clean SIGTERM in the middle of a backlog, metrics that move,
// readiness after sync, and configuration mistakes refused with exit code 2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { useTestCluster } from '../support/cluster.ts';
import { startCli, type RunningCli } from '../support/cli.ts';
import { metricsPortOf, sample, scrape, sumOf } from '../support/scrape.ts';
import { duplicateKeys } from '../support/strict-json.ts';
import { newPod, newWorkflow, ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';
import type { Cluster } from '../../src/testbed/cluster.ts';
import { DEFAULTS } from '../../src/config/settings.ts';
import { SEMI_SPACE_FLAG } from '../../src/commands/runtime-tuning.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

/** Short leader-election durations keep the test quick; the ratios are client-go's. */
const LEASE = ['--leader-election-lease-duration', '4s', '--leader-election-renew-deadline', '3s', '--leader-election-retry-period', '500ms'];

function controller(ns: string, extra: string[]): RunningCli {
  return startCli(['controller', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0', '--log-format', 'json', ...extra]);
}

/** backlog creates a completed Workflow with `n` pods that keep another party's finalizer, so they stay visible after ours goes. */
async function backlog(ns: string, n: number): Promise<string[]> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'done', completed: true }));
  const owner = { name: 'done', uid: wf.metadata.uid as string };
  const pods = Array.from({ length: n }, (_, i) => newPod({ namespace: ns, name: `done-${i}`, workflow: owner, finalizers: ['example.com/keep', ARGO_FINALIZER] }));
  await cluster.createPods(pods);
  return pods.map((p) => p.metadata.name);
}

async function stillHeld(c: Cluster, ns: string): Promise<number> {
  return (await c.listPods(ns)).filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;
}

function removedBy(p: RunningCli): string[] {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.includes('"finalizer removed"'))
    .map((l) => (JSON.parse(l) as { pod: string }).pod);
}

function leads(p: RunningCli): Promise<string> {
  return p.untilStderr((l) => l.includes('"became the leader"'));
}

async function port(p: RunningCli, which: 'metricsPort' | 'healthPort'): Promise<number> {
  const line = await p.untilStderr((l) => l.includes('"controller starting"'));
  return (JSON.parse(line) as Record<string, number>)[which] as number;
}

test('two replicas: exactly one writes; SIGTERM hands over at once, SIGKILL after the lease; nothing is lost', { timeout: 120_000 }, async (t) => {
  const ns = await newNamespace(t);
  const id = `sweeper-${randomBytes(3).toString('hex')}`;
  const pods = await backlog(ns, 120);
  const args = [...LEASE, '--leader-election-namespace', ns, '--leader-election-id', id, '--kube-api-qps', '10', '--kube-api-burst', '1'];

  const a = controller(ns, args);
  await leads(a);
  const b = controller(ns, args);
  await b.untilStderr((l) => l.includes('"cache synced"') && l.includes('"pods"'));
  await cluster.waitFor(async () => removedBy(a).length >= 10, 30_000, 'the first leader to remove some finalizers');
  assert.equal(removedBy(b).length, 0, 'the follower writes nothing while the other leads');

  const sigterm = performance.now();
  a.child.kill('SIGTERM');
  assert.equal((await a.result).code, 0);
  assert.match(a.stderr(), /"released the leader lease"/, 'SIGTERM releases the Lease, so the follower need not wait it out');
  await leads(b);
  t.diagnostic(`SIGTERM handover: ${((performance.now() - sigterm) / 1000).toFixed(1)} s (lease duration 4 s)`);

  await cluster.waitFor(async () => removedBy(b).length >= 10, 30_000, 'the second leader to remove some finalizers');
  const c = controller(ns, args);
  await c.untilStderr((l) => l.includes('"cache synced"') && l.includes('"pods"'));
  const sigkill = performance.now();
  b.child.kill('SIGKILL');
  await b.result;
  await leads(c);
  // How soon (one lease duration after the last renewal seen, at the next jittered try) is a
  // figure, not an assertion: a loaded machine may take longer, never shorter.
  t.diagnostic(`SIGKILL handover: ${((performance.now() - sigkill) / 1000).toFixed(1)} s (lease duration 4 s)`);

  await cluster.waitFor(async () => (await stillHeld(cluster, ns)) === 0, 60_000, 'every finalizer of ours to be removed');
  c.child.kill('SIGTERM');
  assert.equal((await c.result).code, 0);

  // Nothing lost: the wait above saw every pod freed. The logs show no pod freed twice; the
  // SIGKILLed leader may have died between a patch and its log line, at most once per worker.
  const all = [...removedBy(a), ...removedBy(b), ...removedBy(c)];
  assert.equal(new Set(all).size, all.length, 'no pod was freed twice');
  assert.ok(all.length >= pods.length - DEFAULTS.podCleanupWorkers, `the removals were logged (${all.length} of ${pods.length})`);
  const left = await cluster.listPods(ns);
  assert.ok(left.every((p) => p.metadata.finalizers?.join() === 'example.com/keep'), 'the other finalizer stayed on every pod');
});

/** orphans creates a Workflow with `n` pods carrying our finalizer, then deletes the Workflow. */
async function orphans(ns: string, name: string, n: number): Promise<string[]> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name }));
  const owner = { name, uid: wf.metadata.uid as string };
  const pods = Array.from({ length: n }, (_, i) => newPod({ namespace: ns, name: `${name}-${i}`, workflow: owner }));
  await cluster.createPods(pods);
  await cluster.deleteWorkflow(ns, name);
  return pods.map((p) => p.metadata.name);
}

test('a follower holds no work: once the leader has freed orphans and they are gone, its queue is empty; it takes over when the leader is killed', { timeout: 180_000 }, async (t) => {
  const ns = await newNamespace(t);
  const id = `sweeper-${randomBytes(3).toString('hex')}`;
  const args = [...LEASE, '--leader-election-namespace', ns, '--leader-election-id', id, '--resync-period', '1s'];
  const a = controller(ns, args);
  t.after(() => a.child.kill('SIGKILL'));
  await leads(a);
  const b = controller(ns, args);
  t.after(() => b.child.kill('SIGKILL'));
  await b.untilStderr((l) => l.includes('"cache synced"') && l.includes('"pods"'));
  const followerMetrics = await metricsPortOf(b);
  const held = async () => {
    const m = await scrape(followerMetrics);
    return { depth: sumOf(m, 'workqueue_depth', 'name="pod_cleanup"'), adds: sumOf(m, 'workqueue_adds_total', 'name="pod_cleanup"') };
  };

  const first = await orphans(ns, 'gone', 60);
  await cluster.waitFor(async () => (await cluster.listPods(ns)).length === 0, 90_000, 'the orphans to be freed by the leader and deleted');
  // The follower has seen every pod come, lose our finalizer and go.
  await cluster.waitFor(async () => sample(await scrape(followerMetrics), 'finalizer_sweeper_cached_objects{resource="pods"}') === 0, 90_000, 'the follower\'s cache to see the pods go');
  assert.deepEqual(removedBy(b), [], 'the follower wrote nothing');
  assert.deepEqual(await held(), { depth: 0, adds: 0 }, 'the follower queued nothing');
  // A log line reaches us through a pipe, after the patch it follows: the pod can be seen go first.
  await cluster.waitFor(async () => removedBy(a).length >= first.length, 30_000, 'the leader\'s removals to be logged');
  assert.equal(new Set(removedBy(a)).size, first.length);

  a.child.kill('SIGKILL');
  await a.result;
  await leads(b);
  const second = await orphans(ns, 'gone-too', 20);
  await cluster.waitFor(async () => (await cluster.listPods(ns)).length === 0, 90_000, 'the new leader to free the new orphans');
  await cluster.waitFor(async () => removedBy(b).length >= second.length, 30_000, 'the new leader\'s removals to be logged');
  assert.deepEqual(removedBy(b).sort(), second.map((n) => `${ns}/${n}`).sort());
  b.child.kill('SIGTERM');
  assert.equal((await b.result).code, 0);
});

test('SIGTERM in the middle of a backlog finishes in-flight work and exits 0 within the shutdown timeout', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  await backlog(ns, 200);
  const p = controller(ns, ['--leader-elect=false', '--kube-api-qps', '20', '--kube-api-burst', '1', '--shutdown-timeout', '5s']);
  await cluster.waitFor(async () => removedBy(p).length >= 5, 30_000, 'removals to start');
  const sent = performance.now();
  p.child.kill('SIGTERM');
  const { code } = await p.result;
  t.diagnostic(`exited ${((performance.now() - sent) / 1000).toFixed(2)} s after SIGTERM, with ${200 - (await stillHeld(cluster, ns))} of 200 freed`);
  assert.equal(code, 0);
  assert.doesNotMatch(p.stderr(), /shutdown timeout/, 'in-flight work finished before the shutdown timeout had to cancel it');
  assert.ok((await stillHeld(cluster, ns)) > 0, 'it stopped taking new work instead of finishing the backlog');
  assert.match(p.stderr(), /"controller stopped"/);
});

test('a config file changed in place (a ConfigMap without a hash in its name) stops the controller cleanly, releasing its Lease, so that the container restarts with it', { timeout: 90_000 }, async (t) => {
  const ns = await newNamespace(t);
  const config = join(tmpdir(), `finalizer-sweeper-${randomBytes(4).toString('hex')}.yaml`);
  writeFileSync(config, '{}\n');
  t.after(() => rmSync(config, { force: true }));
  const id = `sweeper-${randomBytes(3).toString('hex')}`;
  const p = controller(ns, ['--config', config, '--leader-election-namespace', ns, '--leader-election-id', id, ...LEASE]);
  t.after(() => p.child.kill('SIGKILL'));
  await p.untilStderr((l) => l.includes('"controller starting"'));
  type Lease = { spec?: { holderIdentity?: string } };
  const holder = async () => (await cluster.client.call<Lease>('GET', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${id}`).catch((): Lease => ({}))).spec?.holderIdentity ?? '';
  await cluster.waitFor(async () => (await holder()) !== '', 30_000, 'the Lease to be taken');

  writeFileSync(config, 'dryRun: true\n');
  const { code } = await p.result;

  assert.equal(code, 0);
  assert.match(p.stderr(), /"the config file changed: stopping, so that the container restarts with the new settings"/);
  assert.match(p.stderr(), /"controller stopped"/);
  assert.equal(await holder(), '', 'the Lease released for the restarted container (or another replica) to take at once');
});

test('/readyz turns ready after the caches sync, and /metrics shows the documented names moving with the work', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const p = controller(ns, ['--leader-elect=false']);
  t.after(() => p.child.kill('SIGTERM'));
  const [metricsPort, healthPort] = [await port(p, 'metricsPort'), await port(p, 'healthPort')];
  await cluster.waitFor(async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status === 200, 20_000, '/readyz to answer 200');
  assert.equal((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status, 200);

  const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const value = (text: string, series: string) => Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.split(' ')[1] ?? NaN);
  const before = await scrape();
  for (const name of [
    'workqueue_depth', 'workqueue_adds_total', 'workqueue_queue_duration_seconds', 'workqueue_work_duration_seconds', 'workqueue_retries_total',
    'workqueue_unfinished_work_seconds', 'workqueue_longest_running_processor_seconds', 'finalizer_sweeper_removals_total',
    'finalizer_sweeper_pods_waiting', 'finalizer_sweeper_conflicts_total', 'finalizer_sweeper_api_requests_total',
    'finalizer_sweeper_api_request_duration_seconds', 'finalizer_sweeper_cached_objects', 'finalizer_sweeper_seconds_since_last_watch_event',
    'finalizer_sweeper_leader', 'finalizer_sweeper_build_info', 'finalizer_sweeper_config_info',
  ]) {
    assert.match(before, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exported`);
  }
  assert.equal(value(before, 'finalizer_sweeper_leader'), 1);

  await backlog(ns, 20);
  await cluster.waitFor(async () => (await stillHeld(cluster, ns)) === 0, 30_000, 'the backlog to be freed');
  const after = await scrape();
  assert.equal(value(after, 'finalizer_sweeper_removals_total{reason="recorded",result="removed"}'), 20);
  assert.equal(value(after, 'workqueue_adds_total{name="pod_cleanup"}') >= 20, true);
  assert.equal(value(after, 'finalizer_sweeper_cached_objects{resource="pods"}'), 20);
});

test('started by hand, the controller runs with the image\'s MALLOC_MMAP_THRESHOLD_ and young-generation cap (one restart of its image, same PID); what the operator set stays', { timeout: 90_000 }, async (t) => {
  const ns = await newNamespace(t);
  const environOf = (p: RunningCli) => readFileSync(`/proc/${p.child.pid}/environ`, 'utf8').split('\0');
  const argvOf = (p: RunningCli) => readFileSync(`/proc/${p.child.pid}/cmdline`, 'utf8').split('\0');
  const { MALLOC_MMAP_THRESHOLD_: _ignored, NODE_OPTIONS: _ignoredToo, ...bare } = process.env;
  const start = async (env: NodeJS.ProcessEnv) => {
    const cli = startCli(['controller', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--leader-elect=false', '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--log-format', 'json'], { env });
    t.after(() => cli.child.kill('SIGKILL'));
    await cli.untilStderr((l) => l.includes('"cache synced"') && l.includes('"pods"'));
    return cli;
  };

  const byHand = await start(bare);
  assert.ok(environOf(byHand).includes('MALLOC_MMAP_THRESHOLD_=65536'), 'the variable is in the running image\'s environment');
  assert.ok(argvOf(byHand).includes(SEMI_SPACE_FLAG), 'node runs with the cap');
  assert.equal(byHand.stderr().split('\n').filter((l) => l.includes('"controller starting"')).length, 1, 'the restart came before anything was logged');

  // The threshold chosen, the cap not: restarted for the cap alone, the operator's value kept.
  const threshold = await start({ ...bare, MALLOC_MMAP_THRESHOLD_: '131072' });
  assert.ok(environOf(threshold).includes('MALLOC_MMAP_THRESHOLD_=131072'), 'the operator\'s threshold stands');
  assert.ok(argvOf(threshold).includes(SEMI_SPACE_FLAG), 'node runs with the cap');

  // Both chosen: not restarted, and the operator's cap is the only one.
  const both = await start({ ...bare, MALLOC_MMAP_THRESHOLD_: '131072', NODE_OPTIONS: '--max-semi-space-size=16' });
  assert.ok(!argvOf(both).includes(SEMI_SPACE_FLAG), 'no cap of ours beside the operator\'s');
  assert.ok(environOf(both).includes('NODE_OPTIONS=--max-semi-space-size=16'));

  for (const cli of [byHand, threshold, both]) cli.child.kill('SIGTERM');
  assert.deepEqual(await Promise.all([byHand, threshold, both].map(async (cli) => (await cli.result).code)), [0, 0, 0], 'all stop cleanly on SIGTERM');
});

test('configuration mistakes exit 2 with a message that names what is wrong', { timeout: 60_000 }, async () => {
  const dir = tmpdir();
  const file = (name: string, text: string) => {
    const path = join(dir, `fs-${randomBytes(3).toString('hex')}-${name}`);
    writeFileSync(path, text);
    return path;
  };
  const cases: Array<[string, string[], RegExp]> = [
    ['an unknown flag', ['--pod-cleanup-workerz', '4'], /pod-cleanup-workerz/],
    ['an out-of-range value', ['--pod-cleanup-workers', '0'], /pod-cleanup-workers/],
    ['a malformed duration', ['--resync-period', '300'], /resync-period/],
    ['an unknown key in the file', ['--config', file('unknown.yaml', 'podCleanupWorkerz: 4\n')], /podCleanupWorkerz/],
    ['a wrong type in the file', ['--config', file('type.yaml', 'podCleanupWorkers: many\n')], /podCleanupWorkers/],
    ['malformed YAML', ['--config', file('bad.yaml', 'podCleanupWorkers: [1,\n')], /yaml|YAML/],
    ['a missing config file', ['--config', join(dir, 'does-not-exist.yaml')], /does-not-exist/],
    ['an unknown kubeconfig context', ['--context', 'nope'], /nope/],
  ];
  for (const [what, args, message] of cases) {
    const r = await startCli(['controller', '--kubeconfig', kubeconfigPath, '--leader-elect=false', '--metrics-bind-address', '0', '--health-probe-bind-address', '0', ...args]).result;
    assert.equal(r.code, 2, `${what}: exit code (stderr: ${r.stderr})`);
    assert.match(r.stderr, message, `${what}: the message names it`);
  }
});

test('the controller keeps running while the API server is unreachable, and recovers by itself', { timeout: 90_000 }, async (t) => {
  const ns = await newNamespace(t);
  await backlog(ns, 5);
  // A TCP proxy on loopback stands between the controller and the API server: closed at first
  // (connection refused), then opened. The serving certificate covers 127.0.0.1, so TLS holds.
  const upstream = new URL(readFileSync(kubeconfigPath, 'utf8').match(/server: (\S+)/)?.[1] as string);
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const server = connect(Number(upstream.port), upstream.hostname);
    for (const s of [client, server]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(server).pipe(client);
  });
  const proxyPort = await new Promise<number>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve((proxy.address() as AddressInfo).port)));
  await new Promise((resolve) => proxy.close(resolve)); // keep the port, refuse connections for now
  const kubeconfig = join(tmpdir(), `fs-unreachable-${randomBytes(3).toString('hex')}.yaml`);
  writeFileSync(kubeconfig, readFileSync(kubeconfigPath, 'utf8').replace(upstream.origin, `https://127.0.0.1:${proxyPort}`));

  const p = startCli(['controller', '--kubeconfig', kubeconfig, '--namespace', ns, '--leader-elect=false', '--metrics-bind-address', '0', '--health-probe-bind-address', '127.0.0.1:0', '--log-format', 'json']);
  t.after(() => {
    p.child.kill('SIGTERM');
    for (const s of sockets) s.destroy();
    proxy.close();
  });
  const healthPort = await port(p, 'healthPort');
  await p.untilStderr((l) => l.includes('ECONNREFUSED'));
  await new Promise((r) => setTimeout(r, 2_000));
  assert.equal(p.child.exitCode, null, 'still running');
  assert.equal((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status, 200, 'alive');
  assert.equal((await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status, 500, 'not ready: nothing synced');

  await new Promise<void>((resolve) => proxy.listen(proxyPort, '127.0.0.1', resolve));
  await cluster.waitFor(async () => (await stillHeld(cluster, ns)) === 0, 60_000, 'the backlog to be freed once the API server is reachable');
  assert.equal((await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status, 200, 'ready after recovering');
  // The failed lists and watches were logged: each line must parse as strict JSON, no key twice.
  const lines = p.stderr().split('\n').filter((l) => l.startsWith('{'));
  assert.ok(lines.some((l) => l.includes('list/watch failed')));
  assert.deepEqual(lines.flatMap(duplicateKeys), [], 'no log line carries a key twice');
});
