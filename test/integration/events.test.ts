// Kubernetes Events on the real control plane, through the CLI as an operator runs it: one
// aggregated Event per Workflow whose pods were freed, a Warning on each pod freed by
// --force-after and on each pod that names no owner, nothing with --events none; and what
// `kubectl get events` and `kubectl describe` then show.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { runCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { spawnController } from '../support/controller.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 90_000;

interface Event {
  metadata: { name: string };
  type: string;
  reason: string;
  action: string;
  note: string;
  reportingController: string;
  reportingInstance: string;
  regarding: { kind: string; name: string; uid?: string };
  series?: { count: number };
}

async function eventsIn(namespace: string): Promise<Event[]> {
  const list = await cluster.client.call<{ items: Event[] }>('GET', `/apis/events.k8s.io/v1/namespaces/${namespace}/events`);
  return list.items.filter((e) => e.reportingController === 'finalizer-sweeper');
}

/** occurrences is how many times an Event happened: its series count, or 1. */
const occurrences = (e: Event): number => e.series?.count ?? 1;

async function createWorkflow(namespace: string, name: string, completed = false): Promise<{ name: string; uid: string }> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace, name, completed }));
  return { name, uid: wf.metadata.uid as string };
}

async function waitGone(namespace: string, names: string[]): Promise<void> {
  const wanted = new Set(names);
  await cluster.waitFor(async () => !(await cluster.listPods(namespace)).some((p) => wanted.has(p.metadata.name) && p.metadata.finalizers?.includes(ARGO_FINALIZER)), LONG, `${names.length} pods to lose ${ARGO_FINALIZER}`);
}

function podsOf(namespace: string, wf: { name: string; uid: string }, count: number, extra: { completed?: boolean; labels?: Record<string, string> } = {}): PodObject[] {
  return Array.from({ length: count }, (_, i) => newPod({ namespace, name: `${wf.name}-${i}`, workflow: wf, ...extra }));
}

function kubectl(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfigPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(' ')}: exit ${code}\n${err}`))));
  });
}

test('a Workflow whose pods were freed gets one aggregated Event, which kubectl get events and kubectl describe show', async (t) => {
  const ns = await newNamespace(t);
  const deleted = await createWorkflow(ns, 'deleted');
  const recorded = await createWorkflow(ns, 'recorded', true);
  const deletedPods = podsOf(ns, deleted, 12);
  const recordedPods = podsOf(ns, recorded, 5, { completed: true });
  await cluster.createPods([...deletedPods, ...recordedPods]);

  const ctl = spawnController(kubeconfigPath, ['--namespace', ns]); // --events all is the default
  t.after(() => ctl.terminate());
  await waitGone(ns, recordedPods.map((p) => p.metadata.name));
  await cluster.deleteWorkflow(ns, 'deleted');
  await waitGone(ns, deletedPods.map((p) => p.metadata.name));
  // Stopping writes what is pending: the counts below are final.
  assert.equal(await ctl.terminate(), 0);

  const events = await eventsIn(ns);
  const about = (name: string) => events.filter((e) => e.regarding.kind === 'Workflow' && e.regarding.name === name);
  assert.equal(about('deleted').length, 1, `one Event for the deleted Workflow: ${JSON.stringify(events)}`);
  assert.equal(about('recorded').length, 1, `one Event for the recorded Workflow: ${JSON.stringify(events)}`);
  const [gone] = about('deleted') as [Event];
  const [done] = about('recorded') as [Event];
  assert.deepEqual([gone.type, gone.reason, gone.action, occurrences(gone), gone.regarding.uid], ['Normal', 'FinalizersRemoved', 'RemoveFinalizer', 12, deleted.uid]);
  assert.match(gone.note, /the Workflow is gone or being deleted/);
  assert.deepEqual([done.type, done.reason, occurrences(done)], ['Normal', 'FinalizersRemoved', 5]);
  assert.match(done.note, /has recorded their status/);
  assert.equal(events.length, 2, 'nothing on the pods of an ordinary removal');

  const listed = await kubectl(['get', 'events', '-n', ns]);
  assert.match(listed, /FinalizersRemoved.*workflow\/deleted/);
  const described = await kubectl(['describe', 'workflows.argoproj.io', 'recorded', '-n', ns]);
  assert.match(described, /Normal\s+FinalizersRemoved\s+.*\(x5 over .*finalizer-sweeper\s+Removed finalizer workflows\.argoproj\.io\/status/s);
});

test('--events warnings: a forced removal leaves a Warning on its pod and its Workflow, a pod naming no owner a Warning; no Normal summary', async (t) => {
  const ns = await newNamespace(t);
  const selected = { 'example.com/events-test': 'yes' };
  const live = await createWorkflow(ns, 'live');
  const gone = await createWorkflow(ns, 'gone');
  const stuck = newPod({ namespace: ns, name: 'stuck', workflow: live, labels: selected });
  const anonymous = newPod({ namespace: ns, name: 'anonymous', labels: selected });
  const orphans = podsOf(ns, gone, 3, { labels: selected });
  await cluster.createPods([stuck, anonymous, ...orphans]);
  await cluster.deleteWorkflow(ns, 'gone');
  await cluster.deletePod(ns, 'stuck');

  const ctl = spawnController(kubeconfigPath, ['--namespace', ns, '--pod-selector', 'example.com/events-test=yes', '--force-after', '2s', '--events', 'warnings', '--resync-period', '1s']);
  t.after(() => ctl.terminate());
  await waitGone(ns, ['stuck', ...orphans.map((p) => p.metadata.name)]);
  await cluster.waitFor(async () => (await eventsIn(ns)).length >= 3, LONG, 'the warnings to be written');
  // Resyncs every second decide the pod with no owner again and again: its Warning stays one occurrence.
  await cluster.waitFor(async () => ctl.records.filter((r) => r.msg === 'resync').length >= 4, LONG, 'four resyncs');
  assert.equal(await ctl.terminate(), 0);

  const events = await eventsIn(ns);
  const summary = events.map((e) => `${e.type} ${e.reason} ${e.regarding.kind}/${e.regarding.name} x${occurrences(e)}`).sort();
  assert.deepEqual(summary, [
    'Warning ForcedFinalizerRemoval Pod/stuck x1',
    'Warning ForcedFinalizerRemoval Workflow/live x1',
    'Warning UnattributablePod Pod/anonymous x1',
  ]);
  const anon = events.find((e) => e.reason === 'UnattributablePod') as Event;
  assert.equal(anon.action, 'KeepFinalizer');
  assert.match(anon.note, /names no Workflow/);
  assert.deepEqual((await cluster.getPod(ns, 'anonymous'))?.metadata.finalizers, [ARGO_FINALIZER]);
  // The runbooks' commands find them.
  assert.match(await kubectl(['get', 'events', '-n', ns, '--field-selector', 'reason=ForcedFinalizerRemoval']), /pod\/stuck/);
  assert.match(await kubectl(['get', 'events', '-n', ns, '--field-selector', 'reason=UnattributablePod']), /pod\/anonymous/);
});

test('--events none writes no Event; the sweep writes the same aggregated Event as the controller', async (t) => {
  const ns = await newNamespace(t);
  const first = await createWorkflow(ns, 'first');
  const second = await createWorkflow(ns, 'second');
  const firstPods = podsOf(ns, first, 4);
  const secondPods = podsOf(ns, second, 6);
  await cluster.createPods([...firstPods, ...secondPods]);

  await cluster.deleteWorkflow(ns, 'first');
  const ctl = spawnController(kubeconfigPath, ['--namespace', ns, '--events', 'none']);
  t.after(() => ctl.terminate());
  await waitGone(ns, firstPods.map((p) => p.metadata.name));
  assert.equal(await ctl.terminate(), 0);
  assert.deepEqual(await eventsIn(ns), []);

  await cluster.deleteWorkflow(ns, 'second');
  const sweep = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--output', 'json']);
  assert.equal(sweep.code, 0, sweep.stderr);
  const events = await eventsIn(ns);
  assert.equal(events.length, 1, JSON.stringify(events));
  const [e] = events as [Event];
  assert.deepEqual([e.regarding.name, e.reason, occurrences(e)], ['second', 'FinalizersRemoved', 6]);
  assert.match(e.reportingInstance, /^sweep@/);
});
