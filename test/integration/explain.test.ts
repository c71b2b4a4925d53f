// `finalizer-sweeper explain pod NAMESPACE/NAME` as an operator runs it: the CLI in a child
// process against the real control plane, the `--output json` report read from stdout. Explain
// writes nothing: where our finalizer is on the pod, the removal patch goes as a dry run only,
// and every test that sends one checks that the pod is unchanged afterwards.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { PodReport } from '../../src/explain/pod-report.ts';
import { freePort, writeKubeconfig } from '../../src/testbed/control-plane-files.ts';
import { workflowStatus } from '../../src/testbed/argo-status.ts';
import { ARGO_FINALIZER, NODE_ID_ANNOTATION, newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { runCli, type CliResult } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { INVALID_LABEL, denyPodUpdates, invalidatePodUpdates } from '../support/deny-webhook.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const KUEUE = 'kueue.x-k8s.io/managed';

let scratch: string;
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-explain-test-'));
});
after(() => rm(scratch, { recursive: true, force: true }));

interface ExplainRun extends CliResult {
  report: PodReport;
}

/** explain runs `explain pod NS/NAME --output json` and parses stdout, which must hold only the report. */
async function explain(ns: string, name: string, args: string[] = []): Promise<ExplainRun> {
  const result = await runCli(['explain', 'pod', `${ns}/${name}`, '--kubeconfig', kubeconfigPath, '--output', 'json', ...args]);
  assert.match(result.stdout, /^\{.*\}\n$/, `stdout should be one JSON object; stderr:\n${result.stderr}`);
  return { ...result, report: JSON.parse(result.stdout) as PodReport };
}

/** podState is what must not change under explain: the pod's version and finalizers. */
async function podState(ns: string, name: string): Promise<{ resourceVersion?: string; finalizers?: string[] }> {
  const pod = await cluster.getPod(ns, name);
  assert.ok(pod !== null, `${ns}/${name} exists`);
  return { resourceVersion: pod.metadata.resourceVersion, finalizers: pod.metadata.finalizers };
}

/** terminating waits until the pod has a deletionTimestamp (a DELETE, or the garbage collector's). */
async function terminating(ns: string, name: string): Promise<void> {
  await cluster.waitFor(async () => (await cluster.getPod(ns, name))?.metadata.deletionTimestamp !== undefined, 60_000, `${ns}/${name} to be Terminating`);
}

test('a Terminating pod of a live Workflow that has not recorded it: explains the missing record, exit 1', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  const pod = await cluster.createPod(newPod({ namespace: ns, name: 'live-main', workflow: { name: 'live', uid: wf.metadata.uid ?? '' } }));
  const nodeId = pod.metadata.annotations[NODE_ID_ANNOTATION] ?? '';
  await cluster.setWorkflowStatus(ns, 'live', workflowStatus([{ id: nodeId, name: 'live.main', type: 'Pod', phase: 'Running' }], 'plain'));
  await cluster.deletePod(ns, 'live-main');
  await terminating(ns, 'live-main');
  const before = await podState(ns, 'live-main');

  const run = await explain(ns, 'live-main');

  assert.equal(run.code, 1, run.stderr);
  const { report } = run;
  assert.equal(report.stuck, true);
  assert.deepEqual(report.finalizers.map((f) => [f.finalizer, f.party]), [[ARGO_FINALIZER, 'ours']]);
  assert.ok(report.ours !== null);
  assert.equal(report.ours.watched.matches, true);
  assert.deepEqual(report.ours.owner, { kind: 'Workflow', name: 'live', uid: wf.metadata.uid, attributedBy: 'ownerReference', state: 'alive', because: null, note: null, uninstalled: null });
  assert.deepEqual({ ...report.ours.signals, node: report.ours.signals.node.state }, { podLabel: false, workflowLabel: false, node: 'not-fulfilled' });
  assert.deepEqual({ action: report.ours.decision.action, why: report.ours.decision.why }, { action: 'wait', why: 'owner-alive-unrecorded' });
  assert.ok(report.ours.changesWhen.includes(`waits for Argo to record node ${nodeId}: phase Running`), report.ours.changesWhen.join('\n'));
  assert.deepEqual(report.ours.patch, { result: 'accepted' });
  assert.deepEqual(report.unchecked, []);
  assert.deepEqual(await podState(ns, 'live-main'), before, 'the dry run wrote nothing');
});

test('the text report of the same pod says it in words', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'live-main', workflow: { name: 'live', uid: wf.metadata.uid ?? '' } }));
  await cluster.deletePod(ns, 'live-main');
  await terminating(ns, 'live-main');

  const run = await runCli(['explain', 'pod', `${ns}/live-main`, '--kubeconfig', kubeconfigPath]);

  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stdout, /^stuck: Terminating for .*, held by workflows.argoproj.io\/status \(ours\); ours: keeps it: the Workflow live is alive and has not recorded this pod$/m);
  assert.match(run.stdout, /waits for Argo to record node live-\d+: not in the Workflow's status yet/);
  assert.match(run.stdout, /patch dry run: accepted/);
  assert.equal(run.stderr, '', 'at the default log level, nothing but the report: the API budget\'s start line is the controller\'s');
});

test('an orphan whose Workflow was deleted: owner-gone, exit 1, and the dry run accepted with the pod unchanged', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'gone-main', workflow: { name: 'gone', uid: wf.metadata.uid ?? '' } }));
  await cluster.deleteWorkflow(ns, 'gone');
  await terminating(ns, 'gone-main');
  const before = await podState(ns, 'gone-main');

  const run = await explain(ns, 'gone-main');

  assert.equal(run.code, 1, run.stderr);
  const ours = run.report.ours;
  assert.ok(ours !== null);
  assert.equal(ours.owner.state, 'gone');
  assert.equal(ours.owner.because, 'absent');
  assert.deepEqual({ action: ours.decision.action, reason: ours.decision.reason, priority: ours.decision.priority, evidence: ours.decision.evidence },
    { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner' });
  assert.match(ours.decision.says, /the Workflow gone does not exist \(a live read found none\)/);
  assert.deepEqual(ours.changesWhen, []);
  assert.deepEqual(ours.patch, { result: 'accepted' });
  assert.deepEqual(await podState(ns, 'gone-main'), before, 'same resourceVersion and finalizers: the dry run wrote nothing');
});

test("a pod held only by another party's finalizer: named, not ours, exit 1", async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPod(newPod({ namespace: ns, name: 'queued', finalizers: [KUEUE] }));
  await cluster.deletePod(ns, 'queued');
  await terminating(ns, 'queued');

  const run = await explain(ns, 'queued');

  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.report.stuck, true);
  assert.deepEqual(run.report.finalizers.map((f) => [f.finalizer, f.party]), [[KUEUE, 'kueue']]);
  assert.equal(run.report.ours, null, 'no decision and no patch for a finalizer that is not ours');
  assert.match(run.report.summary, /held by kueue.x-k8s.io\/managed \(Kueue's controller\); not ours/);
});

test("a pod of another Argo install is not watched without its --instance-id, and is with it", async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'other' }));
  const labels = { 'workflows.argoproj.io/controller-instanceid': 'other' };
  await cluster.createPod(newPod({ namespace: ns, name: 'other-main', workflow: { name: 'other', uid: wf.metadata.uid ?? '' }, labels }));

  const without = await explain(ns, 'other-main');
  const with_ = await explain(ns, 'other-main', ['--instance-id', 'other']);

  assert.equal(without.code, 0, 'not Terminating: not stuck');
  assert.equal(without.report.ours?.watched.matches, false);
  assert.match(without.report.summary, /the controller's selector does not select the pod/);
  assert.equal(with_.report.ours?.watched.matches, true);
  assert.equal(with_.report.ours?.watched.selector, 'workflows.argoproj.io/workflow,workflows.argoproj.io/controller-instanceid=other');
});

/**
 * freezePodUpdates installs a ValidatingAdmissionPolicy that denies every pod UPDATE in one
 * namespace, as an operator's admission policy might, and returns once the API server enforces
 * it (the admission plugin learns of policies through a watch). The returned function removes it.
 */
async function freezePodUpdates(ns: string, podName: string): Promise<() => Promise<void>> {
  const api = '/apis/admissionregistration.k8s.io/v1';
  await cluster.client.call('POST', `${api}/validatingadmissionpolicies`, {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy',
    metadata: { name: `freeze-${ns}` },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] }] },
      validations: [{ expression: 'false', message: 'pods here are frozen' }],
    },
  });
  await cluster.client.call('POST', `${api}/validatingadmissionpolicybindings`, {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: `freeze-${ns}-binding` },
    spec: { policyName: `freeze-${ns}`, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } } },
  });
  const probe = () => cluster.client.call('PATCH', `/api/v1/namespaces/${ns}/pods/${podName}?dryRun=All`, { metadata: { labels: { probe: 'x' } } }, 'application/merge-patch+json').then(() => true, () => false);
  await cluster.waitFor(async () => !(await probe()), 30_000, 'the policy to be enforced');
  return async () => {
    await cluster.client.call('DELETE', `${api}/validatingadmissionpolicybindings/freeze-${ns}-binding`);
    await cluster.client.call('DELETE', `${api}/validatingadmissionpolicies/freeze-${ns}`);
    // Lifted only once the API server has seen it go: the namespace's cleanup patches its pods.
    await cluster.waitFor(probe, 30_000, 'the policy to be lifted');
  };
}

test('an admission policy that denies pod UPDATEs: the dry run is denied, naming the policy and its binding', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'gone-main', workflow: { name: 'gone', uid: wf.metadata.uid ?? '' } }));
  await cluster.deleteWorkflow(ns, 'gone');
  await terminating(ns, 'gone-main');
  const unfreeze = await freezePodUpdates(ns, 'gone-main');
  try {
    const run = await explain(ns, 'gone-main');

    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.report.ours?.decision.reason, 'owner-gone', 'the decision is the same: only the write would fail');
    const patch = run.report.ours?.patch;
    assert.equal(patch?.result, 'denied-by-policy', JSON.stringify(patch));
    assert.deepEqual({ policy: patch.policy, binding: patch.binding }, { policy: `freeze-${ns}`, binding: `freeze-${ns}-binding` });
    assert.match(patch.message, /pods here are frozen/);
  } finally {
    await unfreeze();
  }
});

test('an admission webhook that denies pod UPDATEs: the dry run is denied, naming the webhook', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'gone-main', workflow: { name: 'gone', uid: wf.metadata.uid ?? '' } }));
  await cluster.deleteWorkflow(ns, 'gone');
  await terminating(ns, 'gone-main');
  const webhook = await denyPodUpdates(cluster, ns, 'gone-main');
  try {
    const run = await explain(ns, 'gone-main');

    assert.equal(run.code, 1, run.stderr);
    const patch = run.report.ours?.patch;
    assert.equal(patch?.result, 'denied-by-webhook', JSON.stringify(patch));
    assert.deepEqual({ webhook: patch.webhook, status: patch.status }, { webhook: webhook.webhook, status: 403 });
    assert.ok(patch.message.includes(webhook.message), patch.message);
    assert.deepEqual(run.report.admission?.webhooks.filter((w) => w.configuration === webhook.configuration), [{
      kind: 'ValidatingWebhookConfiguration', configuration: webhook.configuration, webhook: webhook.webhook, failurePolicy: 'Fail',
      service: null, url: true, namespaceSelector: 'matches', matchConditions: [], blocks: false,
    }], 'the webhook that denies is also among those listed');
  } finally {
    await webhook.remove();
  }
});

test('a webhook for `pods/*` is called for the pod itself, not only its subresources, and listed', async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPod(newPod({ namespace: ns, name: 'held', finalizers: [KUEUE] }));
  // denyPodUpdates returns only once the API server has called it for a dry-run UPDATE of this very pod.
  const webhook = await denyPodUpdates(cluster, ns, 'held', ['pods/*']);
  try {
    const run = await explain(ns, 'held');

    assert.deepEqual(run.report.admission?.webhooks.filter((w) => w.configuration === webhook.configuration).map((w) => w.webhook), [webhook.webhook]);
  } finally {
    await webhook.remove();
  }
});

test('the admission webhooks a pod UPDATE reaches are listed, with their failurePolicy and whether their Service has a ready endpoint', async (t) => {
  const ns = await newNamespace(t);
  const labels = { 'explain-test': 'webhooks' };
  await cluster.createPod(newPod({ namespace: ns, name: 'held', finalizers: [KUEUE], labels }));
  const service = (name: string) => cluster.client.call('POST', `/api/v1/namespaces/${ns}/services`, {
    apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 443 }], selector: { app: name } },
  });
  await service('idle');
  await service('served');
  // No kube-controller-manager here makes EndpointSlices from pods: this one stands for a ready webhook pod.
  await cluster.client.call('POST', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: 'served-1', labels: { 'kubernetes.io/service-name': 'served', 'endpointslice.kubernetes.io/managed-by': 'explain-test' } },
    addressType: 'IPv4', ports: [{ port: 443 }], endpoints: [{ addresses: ['10.0.0.200'], conditions: { ready: true } }],
  });
  // Ignore, a short timeout, and selectors that take only this test's pod: the API server may call them, and nothing else must suffer for it.
  const hook = (name: string, svc: string, namespace: string, over: Record<string, unknown> = {}) => ({
    name, clientConfig: { service: { namespace: ns, name: svc } },
    rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } }, objectSelector: { matchLabels: labels },
    sideEffects: 'None', admissionReviewVersions: ['v1'], failurePolicy: 'Ignore', timeoutSeconds: 1, ...over,
  });
  const configuration = `explain-${ns.slice(-6)}`;
  const api = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
  await cluster.client.call('POST', api, {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: configuration },
    webhooks: [
      hook('idle.example.com', 'idle', ns),
      hook('served.example.com', 'served', ns, { matchConditions: [{ name: 'always', expression: 'true' }] }),
      hook('elsewhere.example.com', 'served', `${ns}-elsewhere`),
      hook('status.example.com', 'served', ns, { rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'] }] }),
    ],
  });
  try {
    const run = await explain(ns, 'held');

    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.report.unchecked, []);
    assert.deepEqual(run.report.admission?.checked, ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']);
    assert.deepEqual(run.report.admission.webhooks.filter((w) => w.configuration === configuration), [
      { kind: 'MutatingWebhookConfiguration', configuration, webhook: 'idle.example.com', failurePolicy: 'Ignore', service: { namespace: ns, name: 'idle', readyEndpoints: false }, url: false, namespaceSelector: 'matches', matchConditions: [], blocks: false },
      { kind: 'MutatingWebhookConfiguration', configuration, webhook: 'served.example.com', failurePolicy: 'Ignore', service: { namespace: ns, name: 'served', readyEndpoints: true }, url: false, namespaceSelector: 'matches', matchConditions: ['always'], blocks: false },
    ], 'elsewhere.example.com selects another namespace, status.example.com takes only the status subresource: neither is listed');

    const text = await runCli(['explain', 'pod', `${ns}/held`, '--kubeconfig', kubeconfigPath]);
    assert.match(text.stdout, new RegExp(`│ mutating ${configuration} +│ idle.example.com +│ Ignore +│ service `));
    assert.match(text.stdout, /no ready endpoint/);
    assert.ok(!text.stdout.includes('elsewhere.example.com'));
    assert.ok(!text.stdout.includes('blocks:'), 'Ignore lets the UPDATE through: nothing blocks');
  } finally {
    await cluster.client.call('DELETE', `${api}/${configuration}`);
  }
});

test('a pod update the API server finds invalid: the dry run answers 422, naming the field, and the mutating webhook that made it is listed', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'gone-main', workflow: { name: 'gone', uid: wf.metadata.uid ?? '' } }));
  await cluster.deleteWorkflow(ns, 'gone');
  await terminating(ns, 'gone-main');
  // No pod that no longer validates can be made on one release of the server (the known cases,
  // kubernetes #131657 among them, pass on 1.31 to 1.37): a mutating webhook that adds a label no
  // pod may carry makes the API server's own validation refuse every update of the pod instead.
  const webhook = await invalidatePodUpdates(cluster, ns, 'gone-main');
  try {
    const before = await podState(ns, 'gone-main');
    const run = await explain(ns, 'gone-main');

    assert.equal(run.code, 1, run.stderr);
    const patch = run.report.ours?.patch;
    assert.equal(patch?.result, 'invalid', JSON.stringify(patch));
    assert.ok(patch.fields.some((f) => f.field.startsWith('metadata.labels')), JSON.stringify(patch.fields));
    assert.ok(patch.message.includes(INVALID_LABEL), patch.message);
    assert.deepEqual(run.report.admission?.webhooks.filter((w) => w.configuration === webhook.configuration).map((w) => [w.kind, w.webhook, w.failurePolicy]), [
      ['MutatingWebhookConfiguration', webhook.webhook, 'Fail'],
    ]);
    assert.deepEqual(await podState(ns, 'gone-main'), before, 'the dry run wrote nothing');
  } finally {
    await webhook.remove();
  }
});

test('the Events about the pod are listed, whichever API wrote them', async (t) => {
  const ns = await newNamespace(t);
  const pod = await cluster.createPod(newPod({ namespace: ns, name: 'noted', finalizers: [] }));
  const about = { apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'noted', uid: pod.metadata.uid };
  await cluster.client.call('POST', `/api/v1/namespaces/${ns}/events`, {
    metadata: { name: 'noted.core' }, involvedObject: about, type: 'Normal', reason: 'CoreEvent', message: 'written through core/v1',
    source: { component: 'test' }, count: 2, firstTimestamp: '2026-11-26T12:00:00Z', lastTimestamp: '2026-11-26T12:00:01Z',
  });
  await cluster.client.call('POST', `/apis/events.k8s.io/v1/namespaces/${ns}/events`, {
    metadata: { name: 'noted.events' }, regarding: about, type: 'Warning', reason: 'EventsApiEvent', note: 'written through events.k8s.io/v1',
    action: 'Test', reportingController: 'example.com/test', reportingInstance: 'test-1', eventTime: '2026-11-26T12:00:02.000000Z',
  });

  const run = await explain(ns, 'noted');

  assert.deepEqual(run.report.events?.map((e) => [e.reason, e.message, e.count, e.from]), [
    ['CoreEvent', 'written through core/v1', 2, 'test'],
    ['EventsApiEvent', 'written through events.k8s.io/v1', 1, 'example.com/test'],
  ]);
});

test('a pod without finalizers is not stuck: exit 0', async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPod(newPod({ namespace: ns, name: 'bare', finalizers: [] }));

  const run = await explain(ns, 'bare');

  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.report.stuck, false);
  assert.deepEqual(run.report.finalizers, []);
});

test('a pod that does not exist is not stuck: exit 0', async (t) => {
  const ns = await newNamespace(t);

  const run = await explain(ns, 'never-was');

  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.report.pod.exists, false);
});

test('NAMESPACE/NAME without a slash is bad input: exit 2, nothing on stdout', async () => {
  const run = await runCli(['explain', 'pod', 'no-slash', '--kubeconfig', kubeconfigPath]);

  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /expected NAMESPACE\/NAME/);
  assert.equal(run.stdout, '');
});

test('an API server that cannot be reached exits 3', async (t) => {
  const ns = await newNamespace(t);
  const { server, caData } = cluster.client.connection;
  const closed = server.replace(/:\d+$/, `:${await freePort()}`);
  const kubeconfig = await writeKubeconfig(join(scratch, `closed-${ns}.yaml`), { server: closed, caData, token: 'unused' });

  const run = await runCli(['explain', 'pod', `${ns}/any`, '--kubeconfig', kubeconfig, '--output', 'json']);

  assert.equal(run.code, 3, run.stderr);
  assert.match(run.stderr, /cannot reach the API server/);
  assert.equal(run.stdout, '');
});
