// The guardrail (deploy/components/guardrail) on a real API server with RBAC, which the guardrail
// asks who may remove the finalizer: the standalone flavour with the component, as kustomize
// renders it, and the docs' example of another Argo account, applied with kubectl; then forged pod
// updates from several identities. Our account and a tenant are the test bed's
// service-account-shaped token users; Argo's accounts, a plain user, a node, the break-glass group
// and a prefixed install's account are the admin impersonating them (Impersonate-User and
// Impersonate-Group), which is how the API server's admission sees any other identity. The file
// has its own control plane, with RBAC: it restarts the API server last, to measure the
// first seconds after a restart.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { loadAll } from 'js-yaml';
import { ApiClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import type { PodReport } from '../../src/explain/pod-report.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { contextOf, SERVICE_ACCOUNTS } from '../../src/testbed/control-plane-files.ts';
import { ARGO_FINALIZER, COMPLETED_LABEL, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { runCli } from '../support/cli.ts';
import { STAMPED_ANNOTATION, STAMPED_LABEL, stampPodUpdates } from '../support/deny-webhook.ts';
import { renderChart } from '../support/helm-chart.ts';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
import { loadWorkflowCrd } from '../../src/testbed/crds.ts';

const REPO = join(import.meta.dirname, '..', '..');
const COMPONENT = 'deploy/components/guardrail';
const POLICY = 'finalizer-sweeper-guardrail';
/**
 * DENIED is how the API server words a refusal by one of the guardrail's policies, ours or another
 * install's copy under a prefix (k8s.io/apiserver .../policy/validating/dispatcher.go).
 */
const DENIED = /ValidatingAdmissionPolicy '([a-z0-9-]*finalizer-sweeper-guardrail)' with binding '\1' denied request: /;
/** Argo's accounts the component names by default: Argo's manifests, and the community chart's release argo-workflows in namespace argo. */
const ARGO_MANIFESTS = 'system:serviceaccount:argo:argo';
const ARGO_CHART = 'system:serviceaccount:argo:argo-workflows-workflow-controller';
/** Argo's account under the chart in another namespace: added as docs/operations.md shows. */
const ARGO_CHART_ELSEWHERE = 'system:serviceaccount:argo-h:argo-workflows-workflow-controller';
/** The account of a second install, rendered with namePrefix team- and namespace team-sweeper. */
const PREFIXED = 'system:serviceaccount:team-sweeper:team-finalizer-sweeper';
const BREAK_GLASS = 'finalizer-sweeper:break-glass';
const NODE = 'system:node:node-1';
const FOREIGN_A = 'example.com/first';
const FOREIGN_B = 'example.com/last';
const OURS = contextOf(SERVICE_ACCOUNTS[0]);
const TENANT = contextOf(SERVICE_ACCOUNTS[1]);
const TENANT_USER = `system:serviceaccount:${SERVICE_ACCOUNTS[1].namespace}:${SERVICE_ACCOUNTS[1].name}`;
const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const STRATEGIC = 'application/strategic-merge-patch+json';

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

type Who = 'ours' | 'tenant' | 'jane' | 'admin' | 'node' | 'argoManifests' | 'argoChart' | 'argoElsewhere' | 'prefixed' | 'breakGlass';
const clients = new Map<Who, ApiClient>();
/** impersonate makes a client of the admin impersonating `user` (and `group`). */
let impersonate: (user: string, group?: string) => ApiClient;
let plane: ControlPlane;
let cluster: Cluster;
let ns: string;
/** The live Workflow every test pod is owned by: a dangling ownerReference would have the garbage collector delete the pod. */
let owner: { name: string; uid: string };

before(async () => {
  plane = await startControlPlane({ authorization: 'RBAC', crds: [await loadWorkflowCrd()] });
  cluster = Cluster.fromKubeconfig(plane.kubeconfigPath);
  const client = (token: string, user?: string, group?: string): ApiClient => {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (user !== undefined) headers['Impersonate-User'] = user;
    if (group !== undefined) headers['Impersonate-Group'] = group;
    return new ApiClient({ server: plane.server, tls: { ca: Buffer.from(plane.caData, 'base64').toString('utf8') }, headers: async () => headers }, { maxSockets: 4 });
  };
  impersonate = (user, group) => client(plane.token, user, group);
  const sa = (context: string) => plane.serviceAccountTokens.get(context) ?? '';
  clients.set('ours', client(sa(OURS)));
  clients.set('tenant', client(sa(TENANT)));
  clients.set('admin', client(plane.token));
  clients.set('jane', client(plane.token, 'jane', 'developers'));
  clients.set('node', client(plane.token, NODE, 'system:nodes'));
  clients.set('argoManifests', client(plane.token, ARGO_MANIFESTS));
  clients.set('argoChart', client(plane.token, ARGO_CHART));
  clients.set('argoElsewhere', client(plane.token, ARGO_CHART_ELSEWHERE));
  clients.set('prefixed', client(plane.token, PREFIXED));
  clients.set('breakGlass', client(plane.token, 'oncall', BREAK_GLASS));

  // Every account here may update pods and their status, as RBAC goes: what stops them is the policy.
  await kubectl(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'pod-editor' }, rules: [{ apiGroups: [''], resources: ['pods', 'pods/status'], verbs: ['get', 'list', 'patch', 'update'] }] },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'pod-editor' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'pod-editor' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }] },
    ],
  }));
  // Our install (standalone, whose account is the test bed's), with the docs' example, and a second install under a prefix.
  await kubectl(['apply', '-f', '-'], await renderDocsExample());
  await kubectl(['apply', '-f', '-'], await render({ namespace: 'team-sweeper', namePrefix: 'team-', resources: ['deploy/standalone'], components: [COMPONENT], transformers: [`${COMPONENT}/cluster-scoped`] }));

  ns = `guardrail-${Date.now().toString(36)}`;
  await cluster.createNamespace(ns);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'owner' }));
  owner = { name: 'owner', uid: wf.metadata.uid ?? '' };
  await untilEnforced();
});

after(async () => {
  for (const c of clients.values()) c.close();
  cluster?.close();
  await plane?.stop();
});

// --- the component as kustomize renders it ------------------------------------------------------

test('under a namespace: and a namePrefix, the policy and its binding carry no namespace (with the docs\' transformer), the binding names the prefixed policy, and our prefixed account holds remove-only', async () => {
  const objects = loadAll(await render({ namespace: 'team-sweeper', namePrefix: 'team-', resources: ['deploy/standalone'], components: [COMPONENT], transformers: [`${COMPONENT}/cluster-scoped`] })) as KubeObject[];

  const admission = objects.filter((o) => o.apiVersion.startsWith('admissionregistration.k8s.io/'));
  assert.deepEqual(admission.map((o) => [o.kind, o.metadata.name, o.metadata.namespace]), [
    ['ValidatingAdmissionPolicy', `team-${POLICY}`, undefined],
    ['ValidatingAdmissionPolicyBinding', `team-${POLICY}`, undefined],
  ]);
  assert.equal((admission[1]?.['spec'] as { policyName: string }).policyName, `team-${POLICY}`);
  const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'team-finalizer-sweeper');
  const binding = objects.find((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'team-finalizer-sweeper');
  assert.deepEqual((role?.['rules'] as object[]).at(-1), { apiGroups: ['guardrail.finalizer-sweeper'], resources: ['argo-pod-finalizers'], verbs: ['remove-only'] });
  assert.deepEqual(binding?.['subjects'], [{ kind: 'ServiceAccount', name: 'team-finalizer-sweeper', namespace: 'team-sweeper' }]);
});

test('with components/own-namespace (the namespaced flavour), remove-only lands in our Role', async () => {
  const objects = loadAll(await render({ resources: ['deploy/namespaced'], components: [COMPONENT] })) as KubeObject[];

  const role = objects.find((o) => o.kind === 'Role' && o.metadata.name === 'finalizer-sweeper');
  assert.deepEqual((role?.['rules'] as Array<{ verbs: string[] }>).at(-1)?.verbs, ['remove-only']);
  assert.equal(objects.filter((o) => o.kind === 'ClusterRole' && o.metadata.name === 'finalizer-sweeper').length, 0);
});

// --- refused ------------------------------------------------------------------------------------

interface Forged {
  name: string;
  who: Who;
  /** The pod's finalizers before (default: ours alone). */
  finalizers?: string[];
  terminating?: boolean;
  /** The request, given the pod as stored. */
  request(pod: PodObject): { method: 'PATCH' | 'PUT'; body: unknown; contentType: string; subresource?: '/status' };
  /** What the policy's message must say after the API server's prefix. */
  says: RegExp;
}

const mergeOf = (metadata: Record<string, unknown>) => ({ method: 'PATCH' as const, body: { metadata }, contentType: MERGE });
const statusMergeOf = (body: object) => ({ method: 'PATCH' as const, body, contentType: MERGE, subresource: '/status' as const });
/** removal is the controller's own patch (src/work/removal-patch.ts) with `extra` merged into its metadata. */
const removal = (pod: PodObject, extra: Record<string, unknown> = {}) =>
  mergeOf({ resourceVersion: pod.metadata.resourceVersion, finalizers: (pod.metadata.finalizers ?? []).filter((f) => f !== ARGO_FINALIZER), ...extra });
const NOT_LISTED = (user: string) => new RegExp(`^user "${user}" may not remove the finalizer workflows\\.argoproj\\.io/status, which keeps the pod until Argo has recorded its result: only accounts granted remove or remove-only on argo-pod-finalizers\\.guardrail\\.finalizer-sweeper in namespace [a-z0-9-]+ \\(Argo's workflow controller, finalizer-sweeper\\) may, and the group finalizer-sweeper:break-glass$`);
const ONLY_REMOVE = /^finalizer-sweeper's account may only remove the finalizer workflows\.argoproj\.io\/status from a pod that carries it, and change nothing else; this update does not remove it$/;
const IN_ORDER = /^finalizer-sweeper's account may remove only the finalizer workflows\.argoproj\.io\/status: every other finalizer must stay, in its order$/;
const METADATA = /^finalizer-sweeper's account may not change a pod's ownerReferences, nor its labels and annotations under argoproj\.io$/;
const SPEC = /^finalizer-sweeper's account may not change a pod's spec$/;

const FORGED: Forged[] = [
  { name: 'a tenant\'s merge patch `finalizers: null`', who: 'tenant', request: () => mergeOf({ finalizers: null }), says: NOT_LISTED(TENANT_USER) },
  { name: 'a user outside the lists sending the controller\'s exact patch', who: 'jane', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: (p) => removal(p), says: NOT_LISTED('jane') },
  { name: 'a cluster admin (system:masters), whom RBAC lets do anything, named nowhere', who: 'admin', request: (p) => removal(p), says: NOT_LISTED('admin') },
  {
    name: 'a tenant\'s JSON patch removing ours', who: 'tenant', finalizers: [FOREIGN_A, ARGO_FINALIZER],
    request: () => ({ method: 'PATCH', contentType: JSON_PATCH, body: [{ op: 'test', path: '/metadata/finalizers/1', value: ARGO_FINALIZER }, { op: 'remove', path: '/metadata/finalizers/1' }] }),
    says: NOT_LISTED(TENANT_USER),
  },
  {
    name: 'a tenant\'s strategic merge patch deleting ours from the list', who: 'tenant', finalizers: [ARGO_FINALIZER, FOREIGN_B],
    request: () => ({ method: 'PATCH', contentType: STRATEGIC, body: { metadata: { '$deleteFromPrimitiveList/finalizers': [ARGO_FINALIZER] } } }),
    says: NOT_LISTED(TENANT_USER),
  },
  {
    name: 'a tenant\'s PUT of the pod without ours', who: 'tenant',
    request: (p) => ({ method: 'PUT', contentType: 'application/json', body: { ...p, metadata: { ...p.metadata, finalizers: [] } } }),
    says: NOT_LISTED(TENANT_USER),
  },
  { name: 'a tenant removing ours from a Terminating pod', who: 'tenant', terminating: true, request: (p) => removal(p), says: NOT_LISTED(TENANT_USER) },
  // pods/status keeps the request's finalizers (kubernetes#92022): the path issue 44 walked around the guardrail by.
  { name: 'a tenant\'s `finalizers: null` through pods/status', who: 'tenant', request: () => statusMergeOf({ metadata: { finalizers: null } }), says: NOT_LISTED(TENANT_USER) },
  { name: 'a user outside the lists removing ours through pods/status with the status it writes', who: 'jane', finalizers: [ARGO_FINALIZER, FOREIGN_B], request: () => statusMergeOf({ metadata: { finalizers: [FOREIGN_B] }, status: { phase: 'Failed' } }), says: NOT_LISTED('jane') },
  { name: 'a node removing ours through pods/status', who: 'node', request: () => statusMergeOf({ metadata: { finalizers: null }, status: { phase: 'Succeeded' } }), says: NOT_LISTED(NODE) },
  { name: 'a tenant\'s PUT of pods/status without ours', who: 'tenant', request: (p) => ({ method: 'PUT', contentType: 'application/json', subresource: '/status', body: { ...p, metadata: { ...p.metadata, finalizers: [] } } }), says: NOT_LISTED(TENANT_USER) },
  { name: 'our account editing a label', who: 'ours', request: () => mergeOf({ labels: { forged: 'yes' } }), says: ONLY_REMOVE },
  { name: 'our account editing an annotation through pods/status', who: 'ours', request: () => statusMergeOf({ metadata: { annotations: { forged: 'yes' } } }), says: ONLY_REMOVE },
  { name: 'our account removing a foreign finalizer and keeping ours', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER], request: () => mergeOf({ finalizers: [ARGO_FINALIZER] }), says: ONLY_REMOVE },
  { name: 'our account reordering the finalizers', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: [FOREIGN_B, ARGO_FINALIZER, FOREIGN_A] }), says: ONLY_REMOVE },
  { name: 'our account removing ours and a foreign finalizer', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: [FOREIGN_A] }), says: IN_ORDER },
  { name: 'our account removing ours and reordering the others', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: [FOREIGN_B, FOREIGN_A] }), says: IN_ORDER },
  { name: 'our account removing ours and adding a finalizer', who: 'ours', request: (p) => removal(p, { finalizers: ['example.com/added'] }), says: IN_ORDER },
  { name: 'our account\'s `finalizers: null` on a pod held by another party too', who: 'ours', finalizers: [ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: null }), says: IN_ORDER },
  { name: 'our account removing ours and changing Argo\'s annotation', who: 'ours', request: (p) => removal(p, { annotations: { 'workflows.argoproj.io/node-name': 'forged' } }), says: METADATA },
  { name: 'our account removing ours and labelling the pod completed, as Argo does', who: 'ours', request: (p) => removal(p, { labels: { [COMPLETED_LABEL]: 'true' } }), says: METADATA },
  { name: 'our account removing ours and dropping Argo\'s workflow label', who: 'ours', request: (p) => removal(p, { labels: { 'workflows.argoproj.io/workflow': null } }), says: METADATA },
  { name: 'our account removing ours and dropping the ownerReferences', who: 'ours', request: (p) => removal(p, { ownerReferences: null }), says: METADATA },
  {
    name: 'our account removing ours and changing the spec', who: 'ours',
    request: (p) => ({ method: 'PATCH', contentType: MERGE, body: { ...removal(p).body, spec: { activeDeadlineSeconds: 60 } } }),
    says: SPEC,
  },
  { name: 'the prefixed install\'s account editing a label', who: 'prefixed', request: () => mergeOf({ labels: { forged: 'yes' } }), says: ONLY_REMOVE },
];

for (const forged of FORGED) {
  test(`refused, naming the policy: ${forged.name}`, async () => {
    const pod = await podWith(forged.finalizers ?? [ARGO_FINALIZER], forged.terminating === true);
    const { method, body, contentType, subresource } = forged.request(pod);

    const err = await send(forged.who, method, pod, body, contentType, subresource === undefined ? {} : { subresource });

    assert.ok(err instanceof ApiError, `${forged.name}: should be refused`);
    assert.equal(err.status, 403, err.message);
    assert.match(err.message, DENIED);
    assert.match(denial(err), forged.says);
    const now = await cluster.getPod(ns, pod.metadata.name);
    assert.equal(now?.metadata.resourceVersion, pod.metadata.resourceVersion, 'nothing was written');
  });
}

// --- accepted -----------------------------------------------------------------------------------

test('accepted: our account removing only ours, the others kept in order, with the resourceVersion', async () => {
  const pod = await podWith([FOREIGN_A, ARGO_FINALIZER, FOREIGN_B]);

  assert.equal(await send('ours', 'PATCH', pod, removal(pod).body, MERGE), undefined);

  const now = await cluster.getPod(ns, pod.metadata.name);
  assert.deepEqual(now?.metadata.finalizers, [FOREIGN_A, FOREIGN_B]);
  assert.deepEqual([now?.metadata.labels, now?.metadata.annotations], [pod.metadata.labels, pod.metadata.annotations]);
});

test('accepted: our account removing the last finalizer of a Terminating pod, which deletes it in the same UPDATE', async () => {
  const pod = await podWith([ARGO_FINALIZER], true);

  assert.equal(await send('ours', 'PATCH', pod, removal(pod).body, MERGE), undefined);

  assert.equal(await cluster.getPod(ns, pod.metadata.name), null);
});

test('accepted: our account removing ours with a JSON patch', async () => {
  const pod = await podWith([FOREIGN_A, ARGO_FINALIZER]);
  const patch = [{ op: 'test', path: '/metadata/finalizers/1', value: ARGO_FINALIZER }, { op: 'remove', path: '/metadata/finalizers/1' }];

  assert.equal(await send('ours', 'PATCH', pod, patch, JSON_PATCH), undefined);

  assert.deepEqual((await cluster.getPod(ns, pod.metadata.name))?.metadata.finalizers, [FOREIGN_A]);
});

test('accepted: the prefixed install\'s account removing ours, under both installs\' policies', async () => {
  const pod = await podWith([ARGO_FINALIZER, FOREIGN_B]);

  assert.equal(await send('prefixed', 'PATCH', pod, removal(pod).body, MERGE), undefined);

  assert.deepEqual((await cluster.getPod(ns, pod.metadata.name))?.metadata.finalizers, [FOREIGN_B]);
});

for (const [who, what] of [['argoManifests', 'Argo\'s manifests\' account (default)'], ['argoChart', 'the chart\'s account for release argo-workflows in argo (default)'], ['argoElsewhere', 'the chart\'s account in another namespace, added as the docs show']] as const) {
  test(`accepted: ${what} removing ours and labelling the pod completed, as Argo's cleanup does, and removing ours through pods/status`, async () => {
    const pod = await podWith([ARGO_FINALIZER, FOREIGN_B]);
    const other = await podWith([ARGO_FINALIZER]);

    assert.equal(await send(who, 'PATCH', pod, removal(pod, { labels: { [COMPLETED_LABEL]: 'true' } }).body, MERGE), undefined);
    assert.equal(await send(who, 'PATCH', other, { metadata: { finalizers: null } }, MERGE, { subresource: '/status' }), undefined);

    const now = await cluster.getPod(ns, pod.metadata.name);
    assert.deepEqual([now?.metadata.finalizers, now?.metadata.labels?.[COMPLETED_LABEL]], [[FOREIGN_B], 'true']);
    assert.equal((await cluster.getPod(ns, other.metadata.name))?.metadata.finalizers, undefined);
  });
}

test('Helm: with finalizerSweeper.guardrail=true the fragment renders the component\'s policy and grants the chart\'s controller account, computed from the release, which then removes ours', async (t) => {
  const off = await renderChart({ name: 'wf', namespace: 'argo-h2' });
  const chart = await renderChart({ name: 'wf', namespace: 'argo-h2' }, ['--set', 'finalizerSweeper.guardrail=true']);
  const guardrail = chart.all.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'guardrail');
  const account = chart.controller.spec.template.spec.serviceAccountName ?? '';

  assert.equal(off.all.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'guardrail').length, 0, 'off by default');
  assert.deepEqual(guardrail.map((o) => [o.kind, o.metadata.name, o.metadata.namespace]).sort(), [
    ['ClusterRole', 'wf-finalizer-sweeper-guardrail-argo', undefined],
    ['ClusterRoleBinding', 'wf-finalizer-sweeper-guardrail-argo', undefined],
    ['ValidatingAdmissionPolicy', 'wf-finalizer-sweeper-guardrail', undefined],
    ['ValidatingAdmissionPolicyBinding', 'wf-finalizer-sweeper-guardrail', undefined],
  ]);
  const component = loadAll(await readFile(join(REPO, COMPONENT, 'policy.yaml'), 'utf8'))[0] as KubeObject;
  assert.deepEqual(guardrail.find((o) => o.kind === 'ValidatingAdmissionPolicy')?.['spec'], component['spec']);
  assert.deepEqual(guardrail.find((o) => o.kind === 'ClusterRoleBinding')?.['subjects'], [{ kind: 'ServiceAccount', name: account, namespace: 'argo-h2' }]);

  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: guardrail }));
  const argo = impersonate(`system:serviceaccount:argo-h2:${account}`);
  t.after(() => argo.close());
  const pod = await podWith([ARGO_FINALIZER, FOREIGN_B]);
  const removed = await cluster.waitFor(async () => {
    try {
      await argo.request({ method: 'PATCH', path: `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`, body: removal(pod).body, contentType: MERGE });
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) return false; // until the API server's RBAC cache has the new binding
      throw err;
    }
  }, 30_000, 'the chart\'s account to be granted');
  assert.ok(removed);
  assert.deepEqual((await cluster.getPod(ns, pod.metadata.name))?.metadata.finalizers, [FOREIGN_B]);
});

test('accepted: a member of the break-glass group removing every finalizer of a Terminating pod', async () => {
  const pod = await podWith([ARGO_FINALIZER, FOREIGN_B], true);

  assert.equal(await send('breakGlass', 'PATCH', pod, { metadata: { finalizers: null } }, MERGE), undefined);

  assert.equal(await cluster.getPod(ns, pod.metadata.name), null);
});

test('accepted: a kubelet-style status write by a node, which leaves the finalizers alone, and other updates that remove nothing of ours', async () => {
  const held = await podWith([ARGO_FINALIZER, FOREIGN_B]);
  const bare = await podWith([FOREIGN_B]);
  const conditions = [{ type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }];

  assert.equal(await send('node', 'PATCH', held, { status: { phase: 'Succeeded', conditions } }, STRATEGIC, { subresource: '/status' }), undefined);
  assert.equal(await send('tenant', 'PATCH', await fresh(held), { metadata: { labels: { team: 'a' }, annotations: { note: 'x' } } }, MERGE), undefined);
  assert.equal(await send('tenant', 'PATCH', await fresh(held), { metadata: { finalizers: [ARGO_FINALIZER, 'example.com/added'] } }, MERGE), undefined);
  assert.equal(await send('jane', 'PATCH', await fresh(held), { metadata: { finalizers: [ARGO_FINALIZER] } }, MERGE), undefined);
  assert.equal(await send('tenant', 'PATCH', bare, { metadata: { finalizers: null, labels: { team: 'b' } } }, MERGE), undefined);

  const now = await cluster.getPod(ns, held.metadata.name);
  assert.deepEqual([now?.metadata.finalizers, now?.metadata.labels?.['team'], now?.status?.phase], [[ARGO_FINALIZER], 'a', 'Succeeded']);
});

test('a mutating webhook that stamps a label and an annotation on every pod update: our removal passes with them, our label edit is still refused', async (t) => {
  const webhookNs = `${ns}-webhook`;
  await cluster.createNamespace(webhookNs);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: webhookNs, name: 'owner' }));
  const make = async (name: string) => {
    await cluster.createPod(newPod({ namespace: webhookNs, name, finalizers: [ARGO_FINALIZER, FOREIGN_B], workflow: { name: 'owner', uid: wf.metadata.uid ?? '' } }));
    return (await cluster.getPod(webhookNs, name)) as PodObject;
  };
  const probe = await make('probe');
  const webhook = await stampPodUpdates(cluster, webhookNs, probe.metadata.name);
  t.after(() => webhook.remove());
  const freed = await make('freed');
  const edited = await make('edited');

  assert.equal(await send('ours', 'PATCH', freed, removal(freed).body, MERGE, { namespace: webhookNs }), undefined);
  const err = await send('ours', 'PATCH', edited, { metadata: { labels: { forged: 'yes' } } }, MERGE, { namespace: webhookNs });

  const now = await cluster.getPod(webhookNs, freed.metadata.name);
  assert.deepEqual([now?.metadata.finalizers, now?.metadata.labels?.[STAMPED_LABEL], now?.metadata.annotations?.[STAMPED_ANNOTATION]], [[FOREIGN_B], 'yes', 'yes']);
  assert.ok(err instanceof ApiError);
  assert.match(denial(err), ONLY_REMOVE);
});

// --- the product under it -----------------------------------------------------------------------

test('the sweep, run as our account, frees every orphan with the guardrail in force', async () => {
  const pods = await orphans('sweep', 6);

  const run = await runCli(['sweep', '--kubeconfig', plane.kubeconfigPath, '--context', OURS, '--namespace', ns, '--pod-selector', 'workflows.argoproj.io/workflow=sweep', '--output', 'json']);

  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  for (const name of pods) assert.equal(await cluster.getPod(ns, name), null, `${name} should be freed and gone`);
});

test('explain names the policy when its dry run is refused by it, and reports it accepted as our account', async () => {
  const [name = ''] = await orphans('explained', 1);
  const kubeconfig = plane.kubeconfigPath;

  const asAdmin = await runCli(['explain', 'pod', `${ns}/${name}`, '--kubeconfig', kubeconfig, '--output', 'json']);
  const asOurs = await runCli(['explain', 'pod', `${ns}/${name}`, '--kubeconfig', kubeconfig, '--context', OURS, '--output', 'json']);
  const text = await runCli(['explain', 'pod', `${ns}/${name}`, '--kubeconfig', kubeconfig]);

  const refused = (JSON.parse(asAdmin.stdout) as PodReport).ours?.patch;
  assert.equal(refused?.result, 'denied-by-policy', asAdmin.stdout);
  assert.match(refused.policy, /^[a-z0-9-]*finalizer-sweeper-guardrail$/);
  assert.match(refused.denial, NOT_LISTED('admin'));
  assert.deepEqual((JSON.parse(asOurs.stdout) as PodReport).ours?.patch, { result: 'accepted' });
  assert.match(text.stdout, /patch dry run: denied by the ValidatingAdmissionPolicy "([a-z0-9-]*finalizer-sweeper-guardrail)" \(binding "\1"\): user "admin" may not remove/);
});

test('status names Argo\'s account when the guardrail leaves it out, and each account it names that does not exist', async () => {
  const argoDeployment = (namespace: string, account: string) => ({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name: 'workflow-controller' },
    spec: { selector: { matchLabels: { app: 'workflow-controller' } }, template: { metadata: { labels: { app: 'workflow-controller' } }, spec: { serviceAccountName: account, containers: [{ name: 'workflow-controller', image: 'quay.io/argoproj/workflow-controller:v4.1.2' }] } } },
  });
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argo' } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argo-x' } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { namespace: 'argo', name: 'argo' } },
    argoDeployment('argo', 'argo'),
    argoDeployment('argo-x', 'unlisted'),
  ] }));

  const run = await runCli(['status', '--kubeconfig', plane.kubeconfigPath, '--output', 'json']);

  const report = JSON.parse(run.stdout) as { installs: Array<{ install: { namespace: string }; problems: string[]; warnings: string[] }> };
  const ours = report.installs.find((i) => i.install.namespace === 'finalizer-sweeper');
  assert.ok(ours !== undefined, run.stdout);
  assert.deepEqual(ours.problems.filter((p) => p.includes('guardrail')).map((p) => /runs as ServiceAccount (\S+),/.exec(p)?.[1]), ['argo-x/unlisted']);
  // Each kustomize install's grant names the chart's default account, ours the docs' example too, and the Helm test's its release's: one warning per binding.
  assert.deepEqual(ours.warnings.filter((w) => w.includes('guardrail')).map((w) => /ClusterRoleBinding (\S+) names ServiceAccount (\S+),/.exec(w)?.slice(1).join(' ')).sort(), [
    'finalizer-sweeper-guardrail-argo argo-h/argo-workflows-workflow-controller',
    'finalizer-sweeper-guardrail-argo argo/argo-workflows-workflow-controller',
    'team-finalizer-sweeper-guardrail-argo argo/argo-workflows-workflow-controller',
    'wf-finalizer-sweeper-guardrail-argo argo-h2/wf-argo-workflows-workflow-controller',
  ]);
  assert.equal(run.code, 1);
});

// --- right after a restart (last: it restarts this file's API server) ----------------------------

test('right after an API server restart, no removal outside the lists is admitted, and other pod updates pass once the server is ready', async (t) => {
  const held = await podWith([ARGO_FINALIZER]);
  const outcomes: Array<{ at: number; kind: 'removal' | 'label'; result: string }> = [];
  const classify = (err: unknown): string =>
    err === undefined ? 'admitted'
    : !(err instanceof ApiError) ? 'no answer'
    : denial(err) !== '' ? 'refused by the policy'
    : `${err.status} ${err.message.slice(0, 100)}`;
  const start = Date.now();
  let readyAt = Number.POSITIVE_INFINITY;
  const loop = (async () => {
    while (Date.now() < readyAt + 3_000) {
      const at = Date.now() - start;
      const [removal, label] = await Promise.all([
        send('tenant', 'PATCH', held, { metadata: { finalizers: null } }, MERGE, { dryRun: true }).catch((err: unknown) => err),
        send('tenant', 'PATCH', held, { metadata: { labels: { beat: String(at) } } }, MERGE, { dryRun: true }).catch((err: unknown) => err),
      ]);
      outcomes.push({ at, kind: 'removal', result: classify(removal) }, { at, kind: 'label', result: classify(label) });
      await new Promise((r) => setTimeout(r, 50));
    }
  })();

  await plane.restartApiServer();
  readyAt = Date.now();
  await loop;

  const ready = readyAt - start;
  const summary = (kind: string, after: boolean) => {
    const counts = new Map<string, number>();
    for (const o of outcomes.filter((o) => o.kind === kind && (o.at >= ready) === after)) counts.set(o.result, (counts.get(o.result) ?? 0) + 1);
    return JSON.stringify(Object.fromEntries(counts));
  };
  const down = outcomes.findIndex((o) => o.result === 'no answer');
  const firstAnswer = outcomes.slice(down).find((o) => o.result !== 'no answer')?.at;
  t.diagnostic(`restart: unanswered from ${outcomes[down]?.at} ms, answered again at ${firstAnswer} ms, /readyz at ${ready} ms; before /readyz: removals ${summary('removal', false)}, label updates ${summary('label', false)}; the 3 s after: removals ${summary('removal', true)}, label updates ${summary('label', true)}`);
  assert.equal(outcomes.filter((o) => o.kind === 'removal' && o.result === 'admitted').length, 0, 'no removal outside the lists is admitted');
  assert.deepEqual(outcomes.filter((o) => o.kind === 'label' && o.at >= ready && o.result !== 'admitted'), [], 'every other update is admitted once the server is ready');
});

// --- helpers ------------------------------------------------------------------------------------

let serial = 0;

/** podWith creates a pod holding these finalizers (Terminating if asked) and returns it as stored. */
async function podWith(finalizers: string[], terminating = false): Promise<PodObject> {
  const name = `p${++serial}`;
  await cluster.createPod(newPod({ namespace: ns, name, finalizers, workflow: owner }));
  if (terminating) await cluster.deletePod(ns, name);
  return fresh(name);
}

/** fresh reads the pod as stored now. */
async function fresh(pod: PodObject | string): Promise<PodObject> {
  const name = typeof pod === 'string' ? pod : pod.metadata.name;
  const now = await cluster.getPod(ns, name);
  assert.ok(now !== null, `${name} exists`);
  return now;
}

/** orphans makes a Workflow with `count` pods, deletes it, and waits until the garbage collector has marked them all. */
async function orphans(workflow: string, count: number): Promise<string[]> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: workflow }));
  const names = Array.from({ length: count }, (_, i) => `${workflow}-${i}`);
  await cluster.createPods(names.map((name) => newPod({ namespace: ns, name, workflow: { name: workflow, uid: wf.metadata.uid ?? '' } })));
  await cluster.deleteWorkflow(ns, workflow);
  await cluster.waitFor(async () => (await cluster.listPods(ns, `workflows.argoproj.io/workflow=${workflow}`)).every((p) => p.metadata.deletionTimestamp !== undefined), 60_000, `${workflow}'s pods to be Terminating`);
  return names;
}

interface SendOptions {
  /** subresource, e.g. '/status'. */
  subresource?: string;
  /** dryRun: admitted, validated and authorized as the real write, and not stored. */
  dryRun?: boolean;
  namespace?: string;
}

/** send makes one request about the pod as `who`; it returns the ApiError of a refusal, or undefined once accepted. */
async function send(who: Who, method: 'PATCH' | 'PUT', pod: PodObject | string, body: unknown, contentType: string, o: SendOptions = {}): Promise<ApiError | undefined> {
  const client = clients.get(who);
  assert.ok(client !== undefined);
  const name = typeof pod === 'string' ? pod : pod.metadata.name;
  const path = `/api/v1/namespaces/${o.namespace ?? ns}/pods/${name}${o.subresource ?? ''}`;
  try {
    await client.request({ method, path, body, contentType, ...(o.dryRun === true ? { query: { dryRun: 'All' } } : {}) });
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

/** denial is what the policy said, after the API server's words that name it. */
function denial(err: ApiError): string {
  const m = DENIED.exec(err.message);
  return m === null ? '' : err.message.slice(m.index + m[0].length);
}

/**
 * untilEnforced waits until the API server enforces the policies: it loads policies and bindings
 * asynchronously. The probe is a dry run (nothing written) of a tenant's removal.
 */
async function untilEnforced(): Promise<void> {
  const probe = await podWith([ARGO_FINALIZER]);
  await cluster.waitFor(async () => {
    const err = await send('tenant', 'PATCH', probe, { metadata: { finalizers: null } }, MERGE, { dryRun: true });
    return err instanceof ApiError && denial(err) !== '';
  }, 60_000, 'the guardrail to be enforced');
}

/** render builds a throwaway kustomization (paths made relative, as kustomize requires) with `kubectl kustomize`. */
async function render(k: { namespace?: string; namePrefix?: string; resources?: string[]; components?: string[]; transformers?: string[] }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-guardrail-'));
  try {
    const rel = (paths?: string[]) => paths?.map((p) => relative(dir, join(REPO, p)));
    await writeFile(join(dir, 'kustomization.yaml'), JSON.stringify({ ...k, resources: rel(k.resources), components: rel(k.components), transformers: rel(k.transformers) }));
    return (await run('kubectl', ['kustomize', dir])).stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const exec = promisify(execFile);

function run(cmd: string, args: string[]): Promise<{ stdout: string }> {
  return exec(cmd, args, { maxBuffer: 64 * 2 ** 20 });
}

/** kubectl applies or deletes on this file's control plane, the manifest given on stdin. */
async function kubectl(args: string[], input: string): Promise<void> {
  const child = exec('kubectl', ['--kubeconfig', plane.kubeconfigPath, ...args], { maxBuffer: 64 * 2 ** 20 });
  child.child.stdin?.end(input);
  await child;
}

/**
 * renderDocsExample renders the kustomization docs/operations.md gives for naming another Argo
 * account, exactly as written there but for its paths (../ is deploy/), and checks that the account lands in Argo's ClusterRoleBinding.
 */
async function renderDocsExample(): Promise<string> {
  const docs = await readFile(join(REPO, 'docs', 'operations.md'), 'utf8');
  const example = [...docs.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').find((y) => y.includes('finalizer-sweeper-guardrail-argo'));
  assert.ok(example !== undefined, 'docs/operations.md gives the example');
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-guardrail-example-'));
  try {
    await writeFile(join(dir, 'kustomization.yaml'), example.replaceAll('- ../', `- ${relative(dir, join(REPO, 'deploy'))}/`));
    const yaml = (await run('kubectl', ['kustomize', dir])).stdout;
    const argo = (loadAll(yaml) as KubeObject[]).find((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'finalizer-sweeper-guardrail-argo');
    assert.deepEqual(argo?.['subjects'], [
      { kind: 'ServiceAccount', name: 'argo', namespace: 'argo' },
      { kind: 'ServiceAccount', name: 'argo-workflows-workflow-controller', namespace: 'argo' },
      { kind: 'ServiceAccount', name: 'argo-workflows-workflow-controller', namespace: 'argo-h' },
    ]);
    return yaml;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
