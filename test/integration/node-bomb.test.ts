// A node bomb (issue 44, item 3): anyone who may update a Workflow can write status.compressedNodes,
// and three million tiny nodes (`{"0":{},"1":{},...}`) fit in a Workflow that etcd takes. One
// Terminating pod of it, carrying Argo's finalizer, made the controller decode them all: 405 MB
// above its baseline, an OOM kill in the 256Mi container, a crash loop, and no pod of any tenant
// freed. Here the CLI runs with its heap bounded as tightly as in that container, beside orphans
// in other namespaces: it stays up, frees them all, keeps the bomb's pod, and names the Workflow
// it cannot read (a log line and a Warning Event on it).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { constants, zstdCompressSync } from 'node:zlib';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';
import { spawnController } from '../support/controller.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 60_000;
const NODES = 3_000_000;
/** The standalone Deployment's memory limit (deploy/standalone/deployment.yaml). */
const CONTAINER_LIMIT = 256 * 1024 * 1024;
/**
 * V8's old space bounded to half the container's limit: the rest goes to buffers, code and the
 * young generation, which is about what Node sizes for itself in a 256Mi container. A decoding that
 * holds millions of objects dies of it at once, as the container would be killed.
 */
const HEAP = '--max-old-space-size=128';

/**
 * bomb is NODES tiny nodes, compressed with zstd hard enough (level 16, about 1 MB) that the
 * Workflow stays within etcd's 1.5 MiB: the size a tenant's update can have.
 */
function bomb(): string {
  const parts: string[] = [];
  for (let i = 0; i < NODES; i++) parts.push(`"${i.toString(36)}":{}`);
  return zstdCompressSync(`{${parts.join(',')}}`, { params: { [constants.ZSTD_c_compressionLevel]: 16 } }).toString('base64');
}

async function gone(namespace: string, name: string, pods: number): Promise<PodObject[]> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace, name }));
  const owner = { name, uid: wf.metadata.uid! };
  const created = Array.from({ length: pods }, (_, i) => newPod({ namespace, name: `${name}-${i}`, workflow: owner }));
  await cluster.createPods(created);
  await cluster.deleteWorkflow(namespace, name);
  return created;
}

/** peakRss is the most memory the process has held resident (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? NaN) * 1024;
}

test('a Workflow of three million compressed nodes: the controller, its heap bounded as in its container, stays up, frees every other pod, keeps the bomb\'s and names the Workflow', async (t) => {
  const [target, other1, other2] = [await newNamespace(t), await newNamespace(t), await newNamespace(t)];
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: target, name: 'bomb' }));
  const compressedNodes = bomb();
  t.diagnostic(`compressedNodes: ${compressedNodes.length} characters for ${NODES} nodes`);
  await cluster.setWorkflowStatus(target, 'bomb', { phase: 'Running', compressedNodes });
  // Its pod: owner alive, node not recorded (no such node among the three million), Terminating.
  await cluster.createPods([newPod({ namespace: target, name: 'bomb-pod', workflow: { name: 'bomb', uid: wf.metadata.uid! } })]);
  await cluster.deletePod(target, 'bomb-pod');
  const orphans = [...(await gone(target, 'gone', 3)), ...(await gone(other1, 'gone', 5)), ...(await gone(other2, 'gone', 5))];

  const ctl = spawnController(kubeconfigPath, ['--namespace', [target, other1, other2].join(',')], 120_000, { ...process.env, NODE_OPTIONS: HEAP });
  t.after(() => ctl.terminate());
  const pid = ctl.child.pid!;
  const alive = () => ctl.child.exitCode === null && ctl.child.signalCode === null;
  const stillUp = (what: string) => async () => {
    if (!alive()) assert.fail(`the controller exited (${ctl.child.exitCode ?? ctl.child.signalCode}) while waiting for ${what}: ${ctl.stderr.find((l) => l.includes('FATAL')) ?? ctl.stderr.slice(-5).join('\n')}`);
    return false;
  };

  const unreadable = () => ctl.records.find((r) => r.msg.startsWith('the Workflow\'s node status cannot be read') && r.workflow === `${target}/bomb`);
  await cluster.waitFor(async () => unreadable() !== undefined || (await stillUp('the bomb to be read')()), LONG, 'the controller to say it cannot read the bomb');
  assert.match(String(unreadable()!.why), /^status\.compressedNodes: more than \d+ nodes$/);

  const withFinalizer = async () =>
    new Set((await Promise.all([target, other1, other2].map((ns) => cluster.listPods(ns)))).flat().filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).map((p) => `${p.metadata.namespace}/${p.metadata.name}`));
  await cluster.waitFor(async () => (await withFinalizer()).size === 1 || (await stillUp('the orphans to be freed')()), LONG, 'every orphan freed');
  assert.deepEqual([...(await withFinalizer())], [`${target}/bomb-pod`], `${orphans.length} orphans freed, the bomb's pod kept`);

  const events = async () =>
    (await cluster.client.call<{ items: Array<{ reason: string; type: string; note: string; regarding: { kind: string; name: string; uid?: string } }> }>('GET', `/apis/events.k8s.io/v1/namespaces/${target}/events`)).items.filter(
      (e) => e.reason === 'NodeStatusUnreadable',
    );
  await cluster.waitFor(async () => (await events()).length > 0 || (await stillUp('the Event')()), LONG, 'a Warning Event on the bomb');
  const [event] = await events();
  assert.deepEqual([event!.type, event!.regarding.kind, event!.regarding.name, event!.regarding.uid], ['Warning', 'Workflow', 'bomb', wf.metadata.uid]);

  // A resync or two later: still the same process, the bomb's pod still kept, memory within the container's limit.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  assert.ok(alive(), 'the same process, never restarted');
  const peak = peakRss(pid);
  t.diagnostic(`peak resident memory ${(peak / 2 ** 20).toFixed(0)} MiB`);
  assert.ok(peak < CONTAINER_LIMIT, `peak resident memory ${peak} within the container's ${CONTAINER_LIMIT}`);
  assert.deepEqual([...(await withFinalizer())], [`${target}/bomb-pod`]);
  assert.equal(await ctl.terminate(), 0);
});
