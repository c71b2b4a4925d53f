// The guardrail (deploy/components/guardrail) on the real API server: the component as kustomize
// renders it, applied with kubectl, then forged pod updates from several identities. Our account
// and a tenant are the test bed's service-account-shaped token users; Argo's account, a plain
// user and the break-glass group are the admin impersonating them (Impersonate-User and
// Impersonate-Group), which is how the API server's admission sees any other identity. The
// policy is cluster-wide, so every pod this file holds is freed through the break-glass group
// before the policy is removed, and the file waits until the API server has dropped it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { dump, load, loadAll } from 'js-yaml';
import { ApiClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import type { PodReport } from '../../src/explain/pod-report.ts';
import { contextOf, SERVICE_ACCOUNTS } from '../../src/testbed/control-plane-files.ts';
import { ARGO_FINALIZER, COMPLETED_LABEL, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { runCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';

const REPO = join(import.meta.dirname, '..', '..');
const COMPONENT = join(REPO, 'deploy', 'components', 'guardrail');
const POLICY = 'finalizer-sweeper-guardrail';
/** DENIED is how the API server words a refusal by this policy (k8s.io/apiserver .../policy/validating/dispatcher.go). */
const DENIED = `ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: `;
/** The parameters stay in the component's namespace, so that our account is the test bed's. */
const PARAMS_NAMESPACE = 'finalizer-sweeper';
/** Argo's account under the community Helm chart: set through the overlay, as a user would. */
const ARGO_HELM = 'system:serviceaccount:argo-helm:argo-workflows-workflow-controller';
const ARGO_DEFAULT = 'system:serviceaccount:argo:argo';
const BREAK_GLASS = 'finalizer-sweeper:break-glass';
const FOREIGN_A = 'example.com/first';
const FOREIGN_B = 'example.com/last';
const OURS = contextOf(SERVICE_ACCOUNTS[0]);
const TENANT = contextOf(SERVICE_ACCOUNTS[1]);
const TENANT_USER = `system:serviceaccount:${SERVICE_ACCOUNTS[1].namespace}:${SERVICE_ACCOUNTS[1].name}`;
const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const STRATEGIC = 'application/strategic-merge-patch+json';

const { cluster, kubeconfigPath } = useTestCluster();

type Who = 'ours' | 'tenant' | 'jane' | 'argo' | 'argoDefault' | 'breakGlass';
const clients = new Map<Who, ApiClient>();
let manifest: string;
let ns: string;
/** The live Workflow every test pod is owned by: a dangling ownerReference would have the garbage collector delete the pod. */
let owner: { name: string; uid: string };
let paramsNamespaceCreated = false;

before(async () => {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const server = kc.getCurrentCluster()?.server ?? '';
  const ca = Buffer.from(kc.getCurrentCluster()?.caData ?? '', 'base64').toString('utf8');
  const tokenOf = (context?: string): string => {
    if (context !== undefined) kc.setCurrentContext(context);
    const token = kc.getCurrentUser()?.token ?? '';
    kc.setCurrentContext(kc.getContexts()[0]?.name ?? '');
    return token;
  };
  const admin = tokenOf();
  const client = (token: string, user?: string, group?: string): ApiClient => {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (user !== undefined) headers['Impersonate-User'] = user;
    if (group !== undefined) headers['Impersonate-Group'] = group;
    return new ApiClient({ server, tls: { ca }, headers: async () => headers }, { maxSockets: 4 });
  };
  clients.set('ours', client(tokenOf(OURS)));
  clients.set('tenant', client(tokenOf(TENANT)));
  clients.set('jane', client(admin, 'jane', 'developers'));
  clients.set('argo', client(admin, ARGO_HELM));
  clients.set('argoDefault', client(admin, ARGO_DEFAULT));
  clients.set('breakGlass', client(admin, 'oncall', BREAK_GLASS));

  ns = `guardrail-${Date.now().toString(36)}`;
  await cluster.createNamespace(ns);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'owner' }));
  owner = { name: 'owner', uid: wf.metadata.uid ?? '' };
  paramsNamespaceCreated = await cluster.createNamespace(PARAMS_NAMESPACE).then(() => true, (err: unknown) => {
    if (err instanceof Error && err.message.includes('409')) return false;
    throw err;
  });
  manifest = await render({
    components: [COMPONENT],
    // The knob as docs/operations.md gives it: a patch targeted by name, whatever the namespace.
    patches: [{ target: { kind: 'ConfigMap', name: POLICY }, patch: dump({ kind: 'ConfigMap', metadata: { name: POLICY }, data: { argoAccounts: `${ARGO_DEFAULT}, ${ARGO_HELM}` } }) }],
  });
  await kubectl(['apply', '-f', '-'], manifest);
  await untilEnforced();
});

after(async () => {
  if (ns !== undefined) {
    await freeAll(ns);
    await cluster.deleteNamespace(ns);
  }
  if (manifest !== undefined) {
    await kubectl(['delete', '--ignore-not-found', '-f', '-'], manifest);
    await untilLifted();
  }
  if (paramsNamespaceCreated) await cluster.deleteNamespace(PARAMS_NAMESPACE);
  for (const c of clients.values()) c.close();
});

// --- the component as kustomize renders it ------------------------------------------------------

test('rendered under a `namespace:`, the parameters, the binding\'s paramRef and our account\'s namespace all move there', async () => {
  const objects = loadAll(await render({ namespace: 'argo', components: [COMPONENT] })) as Array<{ kind: string; metadata: { namespace?: string }; data?: Record<string, string>; spec?: { paramRef?: { namespace?: string } } }>;

  const params = objects.find((o) => o.kind === 'ConfigMap');
  const binding = objects.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding');
  assert.deepEqual([params?.metadata.namespace, params?.data?.['controllerNamespace'], binding?.spec?.paramRef?.namespace], ['argo', 'argo', 'argo']);
});

test('rendered alone, the parameters name the standalone flavour\'s account and namespace, and kustomize changes nothing in the files (the benchmark applies them as written)', async () => {
  const objects = loadAll(await render({ components: [COMPONENT] })) as Array<{ kind: string; metadata: { namespace?: string }; data?: Record<string, string>; spec?: { paramRef?: { namespace?: string } } }>;

  const files = await Promise.all(['policy.yaml', 'binding.yaml', 'parameters.yaml'].map(async (f) => load(await readFile(join(COMPONENT, f), 'utf8')) as { kind: string }));
  const byKind = (a: { kind: string }, b: { kind: string }) => a.kind.localeCompare(b.kind);
  assert.deepEqual([...objects].sort(byKind), files.sort(byKind));
  const params = objects.find((o) => o.kind === 'ConfigMap');
  assert.equal(params?.metadata.namespace, 'finalizer-sweeper');
  assert.deepEqual(params?.data, {
    controllerNamespace: 'finalizer-sweeper',
    controllerServiceAccount: 'finalizer-sweeper',
    argoAccounts: ARGO_DEFAULT,
    breakGlassGroups: BREAK_GLASS,
  });
  assert.equal(objects.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding')?.spec?.paramRef?.namespace, 'finalizer-sweeper');
});

// --- refused ------------------------------------------------------------------------------------

interface Forged {
  name: string;
  who: Who;
  /** The pod's finalizers before (default: ours alone). */
  finalizers?: string[];
  terminating?: boolean;
  /** The request, given the pod as stored. */
  request(pod: PodObject): { method: 'PATCH' | 'PUT'; body: unknown; contentType: string };
  /** What the policy's message must say after the API server's prefix. */
  says: RegExp;
}

const mergeOf = (metadata: Record<string, unknown>) => ({ method: 'PATCH' as const, body: { metadata }, contentType: MERGE });
/** removal is the controller's own patch (src/work/removal-patch.ts) with `extra` merged into its metadata. */
const removal = (pod: PodObject, extra: Record<string, unknown> = {}) =>
  mergeOf({ resourceVersion: pod.metadata.resourceVersion, finalizers: (pod.metadata.finalizers ?? []).filter((f) => f !== ARGO_FINALIZER), ...extra });
const NOT_LISTED = (user: string) => new RegExp(`^user "${user}" may not remove the finalizer workflows\\.argoproj\\.io/status, .*ConfigMap ${PARAMS_NAMESPACE}/${POLICY}\\)$`);
const ONLY_REMOVE = /^finalizer-sweeper's account may only remove the finalizer workflows\.argoproj\.io\/status from a pod that carries it, and change nothing else; this update does not remove it$/;
const IN_ORDER = /^finalizer-sweeper's account may remove only the finalizer workflows\.argoproj\.io\/status: every other finalizer must stay, in its order$/;
const METADATA = /^finalizer-sweeper's account may not change a pod's labels, annotations or ownerReferences$/;
const SPEC = /^finalizer-sweeper's account may not change a pod's spec$/;

const FORGED: Forged[] = [
  { name: 'a tenant\'s merge patch `finalizers: null`', who: 'tenant', request: () => mergeOf({ finalizers: null }), says: NOT_LISTED(TENANT_USER) },
  { name: 'a user outside the lists sending the controller\'s exact patch', who: 'jane', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: (p) => removal(p), says: NOT_LISTED('jane') },
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
  { name: 'our account editing a label', who: 'ours', request: () => mergeOf({ labels: { forged: 'yes' } }), says: ONLY_REMOVE },
  { name: 'our account removing a foreign finalizer and keeping ours', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER], request: () => mergeOf({ finalizers: [ARGO_FINALIZER] }), says: ONLY_REMOVE },
  { name: 'our account reordering the finalizers', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: [FOREIGN_B, ARGO_FINALIZER, FOREIGN_A] }), says: ONLY_REMOVE },
  { name: 'our account removing ours and a foreign finalizer', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: [FOREIGN_A] }), says: IN_ORDER },
  { name: 'our account removing ours and reordering the others', who: 'ours', finalizers: [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: [FOREIGN_B, FOREIGN_A] }), says: IN_ORDER },
  { name: 'our account removing ours and adding a finalizer', who: 'ours', request: (p) => removal(p, { finalizers: ['example.com/added'] }), says: IN_ORDER },
  { name: 'our account\'s `finalizers: null` on a pod held by another party too', who: 'ours', finalizers: [ARGO_FINALIZER, FOREIGN_B], request: () => mergeOf({ finalizers: null }), says: IN_ORDER },
  { name: 'our account removing ours and changing an annotation', who: 'ours', request: (p) => removal(p, { annotations: { 'workflows.argoproj.io/node-name': 'forged' } }), says: METADATA },
  { name: 'our account removing ours and labelling the pod completed, as Argo does', who: 'ours', request: (p) => removal(p, { labels: { [COMPLETED_LABEL]: 'true' } }), says: METADATA },
  { name: 'our account removing ours and dropping the ownerReferences', who: 'ours', request: (p) => removal(p, { ownerReferences: null }), says: METADATA },
  {
    name: 'our account removing ours and changing the spec', who: 'ours',
    request: (p) => ({ method: 'PATCH', contentType: MERGE, body: { ...removal(p).body, spec: { activeDeadlineSeconds: 60 } } }),
    says: SPEC,
  },
];

for (const forged of FORGED) {
  test(`refused, naming the policy: ${forged.name}`, async () => {
    const pod = await podWith(forged.finalizers ?? [ARGO_FINALIZER], forged.terminating === true);
    const { method, body, contentType } = forged.request(pod);

    const err = await send(forged.who, method, pod, body, contentType);

    assert.ok(err instanceof ApiError, `${forged.name}: should be refused`);
    assert.equal(err.status, 403, err.message);
    assert.ok(err.message.includes(DENIED), err.message);
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

test('accepted: our account removing ours from a Terminating pod another party still holds', async () => {
  const pod = await podWith([ARGO_FINALIZER, FOREIGN_B], true);

  assert.equal(await send('ours', 'PATCH', pod, removal(pod).body, MERGE), undefined);

  assert.deepEqual((await cluster.getPod(ns, pod.metadata.name))?.metadata.finalizers, [FOREIGN_B]);
});

test('accepted: our account removing ours with a JSON patch', async () => {
  const pod = await podWith([FOREIGN_A, ARGO_FINALIZER]);
  const patch = [{ op: 'test', path: '/metadata/finalizers/1', value: ARGO_FINALIZER }, { op: 'remove', path: '/metadata/finalizers/1' }];

  assert.equal(await send('ours', 'PATCH', pod, patch, JSON_PATCH), undefined);

  assert.deepEqual((await cluster.getPod(ns, pod.metadata.name))?.metadata.finalizers, [FOREIGN_A]);
});

test('accepted: Argo\'s account (set through the overlay) removing ours and labelling the pod completed, as Argo\'s cleanup does', async () => {
  const pod = await podWith([ARGO_FINALIZER, FOREIGN_B]);

  assert.equal(await send('argo', 'PATCH', pod, removal(pod, { labels: { [COMPLETED_LABEL]: 'true' } }).body, MERGE), undefined);

  const now = await cluster.getPod(ns, pod.metadata.name);
  assert.deepEqual([now?.metadata.finalizers, now?.metadata.labels?.[COMPLETED_LABEL]], [[FOREIGN_B], 'true']);
});

test('accepted: the other account in argoAccounts removing every finalizer', async () => {
  const pod = await podWith([ARGO_FINALIZER, FOREIGN_B]);

  assert.equal(await send('argoDefault', 'PATCH', pod, { metadata: { finalizers: null } }, MERGE), undefined);

  assert.equal((await cluster.getPod(ns, pod.metadata.name))?.metadata.finalizers, undefined);
});

test('accepted: a member of the break-glass group removing every finalizer of a Terminating pod', async () => {
  const pod = await podWith([ARGO_FINALIZER, FOREIGN_B], true);

  assert.equal(await send('breakGlass', 'PATCH', pod, { metadata: { finalizers: null } }, MERGE), undefined);

  assert.equal(await cluster.getPod(ns, pod.metadata.name), null);
});

test('accepted: updates by other accounts that remove nothing of ours, and the status subresource', async () => {
  const held = await podWith([ARGO_FINALIZER, FOREIGN_B]);
  const bare = await podWith([FOREIGN_B]);

  assert.equal(await send('tenant', 'PATCH', held, { metadata: { labels: { team: 'a' }, annotations: { note: 'x' } } }, MERGE), undefined);
  assert.equal(await send('tenant', 'PATCH', await fresh(held), { metadata: { finalizers: [ARGO_FINALIZER, 'example.com/added'] } }, MERGE), undefined);
  assert.equal(await send('jane', 'PATCH', await fresh(held), { metadata: { finalizers: [ARGO_FINALIZER] } }, MERGE), undefined);
  assert.equal(await send('tenant', 'PATCH', bare, { metadata: { finalizers: null, labels: { team: 'b' } } }, MERGE), undefined);
  assert.equal(await send('tenant', 'PATCH', await fresh(held), { status: { phase: 'Failed' } }, MERGE, { subresource: '/status' }), undefined);

  const now = await cluster.getPod(ns, held.metadata.name);
  assert.deepEqual([now?.metadata.finalizers, now?.metadata.labels?.['team'], now?.status?.phase], [[ARGO_FINALIZER], 'a', 'Failed']);
});

test('with parameters that hold no data no one may remove ours, Argo included, and no other pod update is even evaluated', async (t) => {
  const held = await podWith([ARGO_FINALIZER]);
  const bare = await podWith([FOREIGN_B]);
  const path = `/api/v1/namespaces/${PARAMS_NAMESPACE}/configmaps/${POLICY}`;
  const params = await cluster.client.call<{ data?: unknown }>('GET', path);
  await cluster.client.call('PUT', path, { ...params, data: undefined });
  t.after(async () => {
    await kubectl(['apply', '-f', '-'], manifest);
    await untilEnforced();
  });
  const empty = new RegExp(`^its parameters, ConfigMap ${PARAMS_NAMESPACE}/${POLICY}, hold no data: no account may remove the finalizer`);
  await cluster.waitFor(async () => {
    const err = await send('argo', 'PATCH', held, removal(await fresh(held)).body, MERGE, { dryRun: true });
    return err instanceof ApiError && empty.test(denial(err));
  }, 30_000, 'the API server to see the parameters emptied');

  // Evaluated, each would fail the policy's first rule: accepted, so not evaluated.
  assert.equal(await send('tenant', 'PATCH', held, { metadata: { labels: { team: 'c' } } }, MERGE), undefined);
  assert.equal(await send('tenant', 'PATCH', bare, { metadata: { finalizers: null } }, MERGE), undefined);
  const err = await send('breakGlass', 'PATCH', await fresh(held), { metadata: { finalizers: null } }, MERGE);
  assert.ok(err instanceof ApiError, 'the break-glass group is among the parameters too');
  assert.match(denial(err), empty);
});

test('without its ConfigMap the guardrail is off and refuses nothing (parameterNotFoundAction Allow; Deny would refuse every pod UPDATE)', async (t) => {
  const held = await podWith([ARGO_FINALIZER]);
  await cluster.client.call('DELETE', `/api/v1/namespaces/${PARAMS_NAMESPACE}/configmaps/${POLICY}`);
  t.after(async () => {
    await kubectl(['apply', '-f', '-'], manifest);
    await untilEnforced();
  });

  await cluster.waitFor(async () => (await send('tenant', 'PATCH', held, { metadata: { finalizers: null } }, MERGE, { dryRun: true })) === undefined, 30_000, 'the API server to see the ConfigMap gone');

  assert.equal(await send('tenant', 'PATCH', held, { metadata: { labels: { team: 'd' } } }, MERGE), undefined);
  assert.equal(await send('ours', 'PATCH', await fresh(held), { metadata: { labels: { team: 'e' } } }, MERGE), undefined);
});

// --- the product under it -----------------------------------------------------------------------

test('the sweep, run as our account, frees every orphan with the guardrail in force', async () => {
  const pods = await orphans('sweep', 6);

  const run = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--context', OURS, '--namespace', ns, '--pod-selector', 'workflows.argoproj.io/workflow=sweep', '--output', 'json']);

  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  for (const name of pods) assert.equal(await cluster.getPod(ns, name), null, `${name} should be freed and gone`);
});

test('explain names the policy when its dry run is refused by it, and reports it accepted as our account', async () => {
  const [name = ''] = await orphans('explained', 1);

  const asAdmin = await runCli(['explain', 'pod', `${ns}/${name}`, '--kubeconfig', kubeconfigPath, '--output', 'json']);
  const asOurs = await runCli(['explain', 'pod', `${ns}/${name}`, '--kubeconfig', kubeconfigPath, '--context', OURS, '--output', 'json']);
  const text = await runCli(['explain', 'pod', `${ns}/${name}`, '--kubeconfig', kubeconfigPath]);

  const refused = (JSON.parse(asAdmin.stdout) as PodReport).ours?.patch;
  assert.equal(refused?.result, 'denied-by-policy', asAdmin.stdout);
  assert.deepEqual({ policy: refused.policy, binding: refused.binding }, { policy: POLICY, binding: POLICY });
  assert.match(refused.denial, NOT_LISTED('admin'));
  assert.deepEqual((JSON.parse(asOurs.stdout) as PodReport).ours?.patch, { result: 'accepted' });
  assert.match(text.stdout, new RegExp(`patch dry run: denied by the ValidatingAdmissionPolicy "${POLICY}" \\(binding "${POLICY}"\\): user "admin" may not remove`));
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
  const at = err.message.indexOf(DENIED);
  return at < 0 ? '' : err.message.slice(at + DENIED.length);
}

/**
 * untilEnforced waits until the API server enforces the policy with its parameters: it loads
 * policies, bindings and parameters asynchronously. The probe is a dry run (nothing is written):
 * a tenant's removal on a pod of its own, refused with the message that reads the ConfigMap.
 */
async function untilEnforced(): Promise<void> {
  const probe = await podWith([ARGO_FINALIZER]);
  await cluster.waitFor(async () => {
    const err = await send('tenant', 'PATCH', probe, { metadata: { finalizers: null } }, MERGE, { dryRun: true });
    return err instanceof ApiError && err.message.includes(DENIED) && err.message.includes(`ConfigMap ${PARAMS_NAMESPACE}/${POLICY}`);
  }, 60_000, 'the guardrail to be enforced');
}

/** untilLifted waits until the API server has dropped the policy, so that later files' cleanups are not refused. */
async function untilLifted(): Promise<void> {
  const name = 'lift-probe';
  await cluster.createPod(newPod({ namespace: PARAMS_NAMESPACE, name, finalizers: [ARGO_FINALIZER] }));
  try {
    await cluster.waitFor(async () => (await send('tenant', 'PATCH', name, { metadata: { finalizers: null } }, MERGE, { dryRun: true, namespace: PARAMS_NAMESPACE })) === undefined, 60_000, 'the guardrail to be lifted');
  } finally {
    await cluster.patchPod(PARAMS_NAMESPACE, name, { metadata: { finalizers: null } });
    await cluster.deletePod(PARAMS_NAMESPACE, name);
  }
}

/** freeAll removes every finalizer of the namespace's pods through the break-glass group. */
async function freeAll(namespace: string): Promise<void> {
  for (const pod of await cluster.listPods(namespace)) {
    if ((pod.metadata.finalizers ?? []).length === 0) continue;
    const err = await send('breakGlass', 'PATCH', pod, { metadata: { finalizers: null } }, MERGE);
    if (err !== undefined && err.status !== 404) throw err;
  }
}

/** render builds a throwaway kustomization (component paths made relative, as kustomize requires) with `kubectl kustomize`. */
async function render(k: { namespace?: string; components: string[]; patches?: object[] }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-guardrail-'));
  try {
    await writeFile(join(dir, 'kustomization.yaml'), JSON.stringify({ ...k, components: k.components.map((c) => relative(dir, c)) }));
    return await run('kubectl', ['kustomize', dir]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function kubectl(args: string[], input: string): Promise<string> {
  return run('kubectl', ['--kubeconfig', kubeconfigPath, ...args], input);
}

function run(cmd: string, args: string[], input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`${cmd} ${args.join(' ')}: exit ${code}\n${stderr}`))));
    child.stdin.end(input);
  });
}
