// A 429 storm. This file starts its own API server with two read and one write request in flight
// at most, and a second service account (`noisy`) saturating it with a bounded load, while the
// controller works as its own service account. Every one of them gets 429 Too Many Requests
// (Retry-After: 1) much of the time: the controller must back off, honour Retry-After, never
// crash, and in the end free every eligible pod and touch no other.
//
// APF is off on this server: with it on (1.20, the same tiny limits), fair queuing shielded the
// controller from the noisy account entirely: measured here, 600 noisy loops got 1,458 429s in
// 5 s and a second account's 8 loops none (they queued). The max-in-flight filter that replaces
// it answers 429 to everyone beyond the limit. Without APF headers, auto would fall back to a QPS
// cap; the controller runs with --kube-api-budget-mode apf, the uncapped, adaptive path that auto
// takes on an APF server, which leans hardest on the 429 handling.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { logLines, startCli, type RunningCli } from '../support/cli.ts';
import { budgetLines, metricsPortOf, scrape, sumOf, untilBudgetEvent } from '../support/scrape.ts';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { contextOf, SERVICE_ACCOUNTS } from '../../src/testbed/control-plane-files.ts';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';

const [SWEEPER, , NOISY] = SERVICE_ACCOUNTS;
const NS = 'storm';
const FOREIGN = 'example.com/keep';
/** The storm's length: it stops by itself. */
const STORM_MS = 20_000;
const LONG = 120_000;

let plane: ControlPlane;
let admin: Cluster;

before(async () => {
  plane = await startControlPlane({ apiserverArgs: ['--enable-priority-and-fairness=false', '--max-requests-inflight=2', '--max-mutating-requests-inflight=1'] });
  // The admin is in system:masters, which the max-in-flight filter never turns away.
  admin = Cluster.fromKubeconfig(plane.kubeconfigPath);
});

after(async () => {
  admin?.close();
  await plane?.stop();
});

interface Storm {
  /** stopped resolves when every loop has ended, with the noisy account's tally of answers. */
  stopped: Promise<{ answers: number; throttled: number }>;
  stop(): void;
}

/**
 * storm runs the noisy account's load for STORM_MS at most: 16 readers listing config maps and 8
 * writers patching one, each trying again 10 ms after a 429, so that the server's three slots
 * stay taken without the loops spinning the CPU.
 */
function storm(): Storm {
  const noisy = new Cluster(Cluster.fromKubeconfig(plane.kubeconfigPath, contextOf(NOISY)).client.connection, 64);
  const ac = new AbortController();
  const deadline = performance.now() + STORM_MS;
  const tally = { answers: 0, throttled: 0 };
  const loop = async (send: () => Promise<{ status: number }>): Promise<void> => {
    while (!ac.signal.aborted && performance.now() < deadline) {
      const { status } = await send().catch(() => ({ status: 0 }));
      tally.answers++;
      if (status === 429) {
        tally.throttled++;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  const read = () => noisy.client.raw('GET', `/api/v1/namespaces/${NS}/configmaps`);
  const write = () => noisy.client.raw('PATCH', `/api/v1/namespaces/${NS}/configmaps/noise`, { data: { at: String(Date.now()) } }, 'application/merge-patch+json');
  const loops = [...Array.from({ length: 16 }, () => loop(read)), ...Array.from({ length: 8 }, () => loop(write))];
  return {
    stopped: Promise.all(loops).then(() => {
      noisy.close();
      return tally;
    }),
    stop: () => ac.abort(),
  };
}

async function workflow(name: string, completed: boolean): Promise<{ name: string; uid: string }> {
  const wf = await admin.createWorkflow(newWorkflow({ namespace: NS, name, completed }));
  return { name, uid: wf.metadata.uid as string };
}

/** removed lists the pods the controller logged as freed so far. */
function removed(p: RunningCli): string[] {
  return logLines(p.stderr()).filter((l) => l.msg.startsWith('finalizer removed')).map((l) => l.pod ?? '');
}

const named = (prefix: string, n: number, make: (name: string) => PodObject): PodObject[] => Array.from({ length: n }, (_, i) => make(`${prefix}-${i}`));

test('under a 429 storm the controller backs off, honours Retry-After, never crashes, and frees every eligible pod and no other', { timeout: 240_000 }, async (t) => {
  await admin.createNamespace(NS);
  await admin.client.call('POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'noise' }, data: {} });
  const gone = await workflow('gone', false);
  const done = await workflow('done', true);
  const live = await workflow('live', false);
  const eligible = [
    ...named('orphan', 40, (name) => newPod({ namespace: NS, name, workflow: gone })),
    ...named('shared', 10, (name) => newPod({ namespace: NS, name, workflow: gone, finalizers: [FOREIGN, ARGO_FINALIZER] })),
    ...named('recorded', 30, (name) => newPod({ namespace: NS, name, workflow: done, completed: true })),
  ];
  const unrecorded = named('unrecorded', 5, (name) => newPod({ namespace: NS, name, workflow: live }));
  const foreign = named('foreign', 5, (name) => newPod({ namespace: NS, name, workflow: done, completed: true, finalizers: [FOREIGN] }));
  await admin.createPods([...eligible, ...unrecorded, ...foreign]);
  await admin.deleteWorkflow(NS, 'gone');
  const untouched = new Map((await admin.listPods(NS)).filter((p) => /^(unrecorded|foreign)-/.test(p.metadata.name)).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  assert.equal(untouched.size, 10);

  const noise = storm();
  t.after(() => noise.stop());
  const p = startCli(
    ['controller', '--kubeconfig', plane.kubeconfigPath, '--context', contextOf(SWEEPER), '--namespace', NS, '--kube-api-budget-mode', 'apf',
      '--leader-elect=false', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--log-format', 'json', '--log-level', 'debug'],
    { timeoutMs: LONG + 60_000 },
  );
  t.after(() => p.child.exitCode === null && p.child.kill('SIGKILL'));
  const port = await metricsPortOf(p);

  const throttled = await untilBudgetEvent(p, 'throttled');
  t.diagnostic(`first 429: ${JSON.stringify(throttled)}`);
  assert.equal(throttled.pauseMs, 1000, 'paused for the server\'s Retry-After: 1');
  assert.equal(throttled.level, 'warn');
  assert.ok(throttled.concurrency < throttled.maxConcurrency, 'and cut its concurrency');

  const { answers, throttled: noisyThrottled } = await noise.stopped;
  const freedInStorm = removed(p).length;
  const calm = performance.now();
  t.diagnostic(`the storm is over: the noisy account got ${noisyThrottled} 429s in ${answers} answers; the controller freed ${freedInStorm} pods meanwhile`);
  assert.equal(p.child.exitCode, null, 'the controller is still running');

  const eligibleNames = new Set(eligible.map((pod) => pod.metadata.name));
  await admin.waitFor(
    async () => !(await admin.listPods(NS)).some((pod) => eligibleNames.has(pod.metadata.name) && pod.metadata.finalizers?.includes(ARGO_FINALIZER)),
    LONG,
    `${eligible.length} eligible pods to lose ${ARGO_FINALIZER}`,
  );
  const metrics = await scrape(port);
  const ours429 = sumOf(metrics, 'finalizer_sweeper_api_requests_total', 'code="429"');
  const all = sumOf(metrics, 'finalizer_sweeper_api_requests_total');
  const cuts = budgetLines(p).filter((l) => l.event === 'throttled').length;
  t.diagnostic(`the controller got ${ours429} 429s in ${all} requests (${cuts} logged), and freed the last eligible pod ${((performance.now() - calm) / 1000).toFixed(1)} s after the storm`);
  assert.ok(ours429 > 0);

  const after = await admin.listPods(NS);
  for (const pod of after) {
    if (untouched.has(pod.metadata.name)) {
      assert.equal(pod.metadata.resourceVersion, untouched.get(pod.metadata.name), `${pod.metadata.name} was never written`);
    }
    if (pod.metadata.name.startsWith('shared-')) assert.deepEqual(pod.metadata.finalizers, [FOREIGN], `${pod.metadata.name} keeps the other finalizer`);
  }
  assert.equal(after.filter((pod) => untouched.has(pod.metadata.name)).length, untouched.size);

  p.child.kill('SIGTERM');
  const exit = await p.result;
  assert.equal(exit.code, 0, `exit code on SIGTERM (stderr tail: ${exit.stderr.slice(-2000)})`);
  assert.deepEqual(exit.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('{')), [], 'nothing but log lines on stderr: no crash, no stack trace');
});
