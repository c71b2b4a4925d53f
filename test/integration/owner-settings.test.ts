// Owner settings that do not name the pods' owner, on the real control plane with Argo's
// CronWorkflow and WorkflowTemplate CRDs installed beside the Workflow CRD: the owner list and
// watch of such a resource work, and every Workflow's name reads there as "not found" (a 404
// naming the object). No command may take that for an owner gone: the controller, the sweep and
// explain refuse a resource that serves another kind (exit 2, one line naming the settings and
// what the server serves); a consistent pair (cronworkflows, CronWorkflow), which discovery
// cannot tell from the owner, is refused on the pods' word: Argo's are controlled by their
// Workflow (src/owners/owner-kind.ts). And with the owner's CRD missing at start, pods that Argo
// labelled recorded still go.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { installCrds } from '../../src/testbed/crds.ts';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { runCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { removals, startController } from '../support/controller.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 60_000;
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** argoCrd is the shape of Argo's minimal CRDs (schema-free): a namespaced kind of argoproj.io. */
function argoCrd(plural: string, kind: string, group = 'argoproj.io'): object {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: 'Namespaced',
      versions: [{ name: 'v1alpha1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
}

// CronWorkflow and WorkflowTemplate beside the test bed's Workflow CRD, as Argo's install has
// them, for the whole file: a CRD deleted takes a while to go, and cannot be created again meanwhile.
const ARGO_CRDS = ['cronworkflows.argoproj.io', 'workflowtemplates.argoproj.io'];
before(() => installCrds(cluster.client, [argoCrd('cronworkflows', 'CronWorkflow'), argoCrd('workflowtemplates', 'WorkflowTemplate')]));
after(() => Promise.all(ARGO_CRDS.map((name) => cluster.client.call('DELETE', `${CRDS}/${name}`).catch(() => undefined))));

/**
 * runningWorkflows creates two running Workflows (nothing recorded) with three pods each, one of
 * them Terminating, and a CronWorkflow named as the first Workflow: every pod must keep our
 * finalizer whatever the settings say.
 */
async function runningWorkflows(ns: string): Promise<PodObject[]> {
  const pods: PodObject[] = [];
  for (const name of ['nightly', 'build']) {
    const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name }));
    for (let i = 0; i < 3; i++) pods.push(newPod({ namespace: ns, name: `${name}-${i}`, workflow: { name, uid: wf.metadata.uid! } }));
  }
  await cluster.client.call('POST', `/apis/argoproj.io/v1alpha1/namespaces/${ns}/cronworkflows`, { apiVersion: 'argoproj.io/v1alpha1', kind: 'CronWorkflow', metadata: { name: 'nightly' }, spec: {} });
  await cluster.createPods(pods);
  await cluster.deletePod(ns, 'build-0');
  return pods;
}

/** withoutOurFinalizer names the pods that no longer carry our finalizer (or no longer exist). */
async function withoutOurFinalizer(ns: string, pods: PodObject[]): Promise<string[]> {
  const now = new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, p.metadata.finalizers ?? []]));
  return pods.map((p) => p.metadata.name).filter((name) => !(now.get(name) ?? []).includes(ARGO_FINALIZER));
}

const REFUSED: { name: string; flags: string[]; says: RegExp }[] = [
  { name: 'another kind under the resource (cronworkflows)', flags: ['--owner-resource', 'cronworkflows'], says: /argoproj.io\/v1alpha1 serves cronworkflows as kind CronWorkflow, not Workflow/ },
  { name: 'another kind under the resource (workflowtemplates)', flags: ['--owner-resource', 'workflowtemplates'], says: /serves workflowtemplates as kind WorkflowTemplate, not Workflow/ },
  { name: 'the singular', flags: ['--owner-resource', 'workflow'], says: /has no resource workflow; it serves kind Workflow as workflows/ },
  { name: 'the kind of another resource', flags: ['--owner-kind', 'CronWorkflow'], says: /serves workflows as kind Workflow, not CronWorkflow/ },
];

for (const r of REFUSED) {
  test(`owner settings naming ${r.name}: the sweep, explain and the controller refuse them with exit 2, and free nothing`, { timeout: 180_000 }, async (t) => {
    const ns = await newNamespace(t);
    const pods = await runningWorkflows(ns);
    const common = ['--kubeconfig', kubeconfigPath, ...r.flags];

    const sweep = await runCli(['sweep', ...common, '--namespace', ns]);
    assert.equal(sweep.code, 2, `sweep: ${sweep.stderr}`);
    const refusal = sweep.stderr.split('\n').filter((l) => l.includes('refusing the owner settings'));
    assert.equal(refusal.length, 1, `one line: ${sweep.stderr}`);
    assert.match(refusal[0]!, r.says);
    assert.match(refusal[0]!, /--owner-group argoproj.io --owner-version v1alpha1 --owner-resource \S+ --owner-kind \S+/, 'the line names the settings');

    const explain = await runCli(['explain', 'pod', `${ns}/build-0`, ...common]);
    assert.equal(explain.code, 2, `explain: ${explain.stderr}`);
    assert.match(explain.stderr, r.says);

    const controller = await runCli(['controller', ...common, '--namespace', ns, '--leader-elect=false', '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { timeoutMs: 60_000 });
    assert.equal(controller.code, 2, `controller: ${controller.stderr}`);
    assert.match(controller.stderr, r.says);

    assert.deepEqual(await withoutOurFinalizer(ns, pods), [], 'every pod keeps our finalizer');
  });
}

const CRON_OWNER = { group: 'argoproj.io', version: 'v1alpha1', resource: 'cronworkflows', kind: 'CronWorkflow' };
const CRON_FLAGS = ['--owner-resource', 'cronworkflows', '--owner-kind', 'CronWorkflow'];
/** WRONG_KIND is the line that refuses CronWorkflow for pods that their Workflow controls. */
const WRONG_KIND = /--owner-resource cronworkflows --owner-kind CronWorkflow\): no selected pod carrying workflows\.argoproj\.io\/status is controlled by a CronWorkflow, and some are controlled by another kind of argoproj\.io: Workflow \(6 pods, e\.g\. [^)]+\); set --owner-kind and --owner-resource/;

test('owner settings cronworkflows with kind CronWorkflow, served and consistent but not the pods\' owner: the sweep and the controller exit 2 naming both kinds, and the right settings free a deleted Workflow\'s pods', { timeout: 180_000 }, async (t) => {
  const ns = await newNamespace(t);
  const pods = await runningWorkflows(ns);
  const common = ['--kubeconfig', kubeconfigPath, '--namespace', ns, ...CRON_FLAGS];

  const sweep = await runCli(['sweep', ...common, '--output', 'json']);
  assert.equal(sweep.code, 2, `sweep: ${sweep.stderr}`);
  const refusal = sweep.stderr.split('\n').filter((l) => l.includes('refusing the owner settings'));
  assert.equal(refusal.length, 1, `one line: ${sweep.stderr}`);
  assert.match(refusal[0]!, WRONG_KIND);
  assert.equal(sweep.stdout, '', 'no summary of a refused sweep');

  const controller = await runCli(['controller', ...common, '--leader-elect=false', '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { timeoutMs: 60_000 });
  assert.equal(controller.code, 2, `controller: ${controller.stderr}`);
  assert.match(controller.stderr, WRONG_KIND);

  // The positive control: the same pods are free to go under the right settings once their
  // Workflow is deleted; under the refused ones, nothing went.
  await cluster.deleteWorkflow(ns, 'nightly');
  assert.deepEqual(await withoutOurFinalizer(ns, pods), []);
  const right = await startController(kubeconfigPath, { namespaces: [ns] });
  t.after(() => right.stop());
  await cluster.waitFor(async () => (await withoutOurFinalizer(ns, pods)).length === 3, LONG, 'the deleted Workflow\'s pods freed under the right settings');
  assert.deepEqual((await withoutOurFinalizer(ns, pods)).sort(), ['nightly-0', 'nightly-1', 'nightly-2']);
});

test('owner kind CronWorkflow, the controller started before any pod: the first pods, controlled by their Workflow, make it unready with an error line and an Event; a pod of the kind settles it, and the sweep then goes ahead', { timeout: 180_000 }, async (t) => {
  const ns = await newNamespace(t);
  const c = await startController(kubeconfigPath, { namespaces: [ns], owner: CRON_OWNER }, { events: true });
  t.after(() => c.stop());
  await cluster.waitFor(async () => c.controller.synced() && c.controller.owners.settingsProven(), LONG, 'the controller synced, its settings proven');
  assert.equal(c.controller.ownerKindReady(), true, 'no pod yet: nothing to refuse');

  const pods = await runningWorkflows(ns);
  await cluster.waitFor(async () => !c.controller.ownerKindReady(), LONG, 'unready once the pods appear');
  const refused = c.records.filter((r) => r.level === 'error' && r.msg.startsWith('refusing the owner settings'));
  assert.equal(refused.length, 1, JSON.stringify(refused));
  assert.match(String(refused[0]!.err), /no selected pod carrying workflows\.argoproj\.io\/status is controlled by a CronWorkflow.*Workflow \(\d pods?/);
  await cluster.waitFor(async () => (await wrongKindEvents(ns)).length === 1, LONG, 'a WrongOwnerKind Event on a pod');
  const event = (await wrongKindEvents(ns))[0]!;
  assert.equal(event.type, 'Warning');
  assert.equal(event.regarding.kind, 'Pod');

  // A pod that a CronWorkflow controls: the settings name an owner of the pods after all.
  const cron = await cluster.client.call<{ metadata: { uid: string } }>('GET', `/apis/argoproj.io/v1alpha1/namespaces/${ns}/cronworkflows/nightly`);
  const byCron = newPod({ namespace: ns, name: 'by-cron', workflow: { name: 'nightly', uid: cron.metadata.uid } });
  byCron.metadata.ownerReferences = [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'CronWorkflow', name: 'nightly', uid: cron.metadata.uid, controller: true }];
  await cluster.createPods([byCron]);
  await cluster.waitFor(async () => c.controller.ownerKindReady(), LONG, 'ready again once a pod of the kind appears');
  assert.ok(c.records.some((r) => r.msg.startsWith('recovered: a selected pod is controlled by a CronWorkflow')));

  const sweep = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, ...CRON_FLAGS, '--dry-run', '--output', 'json']);
  assert.equal(sweep.code, 0, `pods of the kind beside others: no refusal: ${sweep.stderr}`);
  assert.doesNotMatch(sweep.stderr, /refusing the owner settings/);
  assert.deepEqual(await withoutOurFinalizer(ns, pods), [], 'nothing freed');
});

/** wrongKindEvents lists the WrongOwnerKind Events of a namespace. */
async function wrongKindEvents(ns: string): Promise<Array<{ type: string; reason: string; regarding: { kind: string; name: string } }>> {
  const list = await cluster.client.call<{ items: Array<{ type: string; reason: string; regarding: { kind: string; name: string } }> }>('GET', `/apis/events.k8s.io/v1/namespaces/${ns}/events`);
  return list.items.filter((e) => e.reason === 'WrongOwnerKind');
}

test('owner CRD missing at start: a pod Argo labelled recorded goes at once, an unrecorded one waits; the CRD installed later, the settings are proven and a deleted owner\'s pods go', { timeout: 180_000 }, async (t) => {
  const ns = await newNamespace(t);
  const group = `nocrd-${randomBytes(3).toString('hex')}.example.com`;
  const owner = { group, version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };
  const crdName = `workflows.${group}`;
  t.after(() => cluster.client.call('DELETE', `${CRDS}/${crdName}`).catch(() => undefined));
  const ref = (name: string, uid: string) => [{ apiVersion: `${group}/v1alpha1`, kind: 'Workflow', name, uid, controller: true }];
  const recorded = newPod({ namespace: ns, name: 'recorded', workflow: { name: 'gone', uid: 'gone-uid' }, completed: true });
  const unrecorded = newPod({ namespace: ns, name: 'unrecorded', workflow: { name: 'gone', uid: 'gone-uid' } });
  for (const p of [recorded, unrecorded]) p.metadata.ownerReferences = ref('gone', 'gone-uid');
  await cluster.createPods([recorded, unrecorded]);

  const c = await startController(kubeconfigPath, { namespaces: [ns], owner });
  t.after(() => c.stop());
  await cluster.waitFor(async () => (await withoutOurFinalizer(ns, [recorded])).length === 1, LONG, 'the recorded pod freed without its CRD');
  assert.deepEqual(removals(c.records).map((r) => [r.pod, r.reason]), [[`${ns}/recorded`, 'recorded']]);
  await sleep(3_000);
  assert.deepEqual(await withoutOurFinalizer(ns, [unrecorded]), [], 'the unrecorded pod waits: no owner can be read');
  assert.equal(c.controller.owners.settingsProven(), false);

  // Argo installed: the owner resource is served, its settings proven, and the pod whose owner
  // never existed (a UID no Workflow has) goes as an orphan.
  await installCrds(cluster.client, [argoCrd('workflows', 'Workflow', group)]);
  await cluster.waitFor(async () => c.controller.owners.settingsProven(), LONG, 'the settings proven once the CRD is installed');
  await cluster.waitFor(async () => removals(c.records).length === 2, LONG, 'the orphan freed');
  assert.deepEqual(removals(c.records).map((r) => [r.pod, r.reason]), [[`${ns}/recorded`, 'recorded'], [`${ns}/unrecorded`, 'owner-gone']]);
  assert.deepEqual((await withoutOurFinalizer(ns, [recorded, unrecorded])).sort(), ['recorded', 'unrecorded']);
});
