import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupOf, InvalidObjectError, toPodMeta, toWorkflowMeta } from './trim.ts';
import { ARGO_CONVENTIONS, DEFAULTS } from '../config/settings.ts';
import type { MetaObject, ObjectMeta, OwnerRef } from '../kube/objects.ts';

const FINALIZER = 'workflows.argoproj.io/status';
const opts = { finalizer: FINALIZER, conventions: ARGO_CONVENTIONS, owner: DEFAULTS.owner };

function workflowRef(over: Partial<OwnerRef> = {}): OwnerRef {
  return { apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: 'wf', uid: 'wf-uid', controller: true, ...over };
}

function wirePod(meta: Partial<ObjectMeta> = {}): MetaObject {
  return {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadata',
    metadata: {
      namespace: 'ns',
      name: 'wf-1',
      uid: 'pod-uid',
      resourceVersion: '42',
      creationTimestamp: '2026-11-22T04:00:00Z',
      labels: { 'workflows.argoproj.io/workflow': 'wf', 'workflows.argoproj.io/completed': 'false', other: 'x' },
      annotations: { 'workflows.argoproj.io/node-id': 'wf-1' },
      finalizers: ['example.com/keep', FINALIZER],
      ownerReferences: [workflowRef()],
      ...meta,
    },
  };
}

test('a pod trims to identity, creation time, finalizers in order, the two labels, its Workflow owner and its node ID', () => {
  assert.deepEqual(toPodMeta(wirePod(), opts), {
    namespace: 'ns',
    name: 'wf-1',
    uid: 'pod-uid',
    resourceVersion: '42',
    deletionTimestamp: null,
    createdAt: Date.UTC(2026, 10, 22, 4, 0, 0),
    finalizers: ['example.com/keep', FINALIZER],
    completedLabel: 'false',
    workflowLabel: 'wf',
    owner: { name: 'wf', uid: 'wf-uid' },
    nodeId: 'wf-1',
    seenAt: undefined,
  });
});

// The node ID is kept only for a pod that may wait for its node: it costs memory per cached pod.
const nodeIdCases: Array<{ name: string; meta: Partial<ObjectMeta>; nodeId: string | null }> = [
  { name: 'the node-id annotation', meta: {}, nodeId: 'wf-1' },
  { name: 'derived from the node-name annotation, as Argo does', meta: { annotations: { 'workflows.argoproj.io/node-name': 'wf[0].a' } }, nodeId: 'wf-3986212215' }, // Go's hash/fnv New32a of "wf[0].a"
  { name: 'Argo\'s NodeID(""), not the pod name, without either annotation', meta: { annotations: {} }, nodeId: 'wf-2166136261' }, // as woc.nodeID: a missing node-name reads as ""
  { name: 'none for a recorded pod', meta: { labels: { 'workflows.argoproj.io/completed': 'true' } }, nodeId: null },
  { name: 'none without our finalizer', meta: { finalizers: ['example.com/keep'] }, nodeId: null },
  { name: 'none without an owner reference', meta: { ownerReferences: [] }, nodeId: null },
];
for (const { name, meta, nodeId } of nodeIdCases) {
  test(`node ID: ${name}`, () => assert.equal(toPodMeta(wirePod(meta), opts).nodeId, nodeId));
}

test('a creationTimestamp missing or unreadable is unknown (null), which only keeps the namespace rule off the pod', () => {
  assert.equal(toPodMeta(wirePod({ creationTimestamp: undefined }), opts).createdAt, null);
  assert.equal(toPodMeta(wirePod({ creationTimestamp: 'yesterday' }), opts).createdAt, null);
});

test('deletionTimestamp becomes epoch milliseconds', () => {
  const pod = toPodMeta(wirePod({ deletionTimestamp: '2026-11-22T05:00:00Z' }), opts);
  assert.equal(pod.deletionTimestamp, Date.UTC(2026, 10, 22, 5, 0, 0));
});

test('an unreadable deletionTimestamp is refused rather than read as "not deleting"', () => {
  assert.throws(() => toPodMeta(wirePod({ deletionTimestamp: 'soon' }), opts), InvalidObjectError);
});

test('the owner is the controller reference when several match', () => {
  const pod = toPodMeta(wirePod({ ownerReferences: [workflowRef({ uid: 'a', controller: false }), workflowRef({ uid: 'b', controller: true })] }), opts);
  assert.equal(pod.owner?.uid, 'b');
});

test('without a controller reference, the first matching one is the owner', () => {
  const pod = toPodMeta(wirePod({ ownerReferences: [workflowRef({ uid: 'a', controller: undefined }), workflowRef({ uid: 'b', controller: false })] }), opts);
  assert.equal(pod.owner?.uid, 'a');
});

test('a reference of the right kind in another group is not the owner', () => {
  const pod = toPodMeta(wirePod({ ownerReferences: [workflowRef({ apiVersion: 'example.com/v1' })] }), opts);
  assert.equal(pod.owner, null);
});

test('a reference of another kind in the right group is not the owner, even as controller', () => {
  const pod = toPodMeta(
    wirePod({ ownerReferences: [workflowRef({ kind: 'WorkflowTemplate', uid: 'x' }), workflowRef({ uid: 'y', controller: false })] }),
    opts,
  );
  assert.equal(pod.owner?.uid, 'y');
});

// A controlling reference of another kind or group leaves the label nothing to attribute: with
// --owner-kind CronWorkflow, an Argo pod (controlled by its Workflow) must not be judged by the
// CronWorkflow that happens to bear its label's name.
const labelAttribution: { name: string; refs: OwnerRef[]; owner?: typeof DEFAULTS.owner; label: string | null }[] = [
  { name: 'no reference at all', refs: [], label: 'wf' },
  { name: 'a controlling Workflow, the owner configured as CronWorkflow', refs: [workflowRef()], owner: { ...DEFAULTS.owner, resource: 'cronworkflows', kind: 'CronWorkflow' }, label: null },
  { name: 'a controlling Workflow of another group', refs: [workflowRef({ apiVersion: 'example.com/v1' })], label: null },
  { name: 'a controlling ReplicaSet', refs: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-uid', controller: true }], label: null },
  { name: 'a reference of another kind that does not control', refs: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-uid' }], label: 'wf' },
  { name: 'its own controlling reference', refs: [workflowRef()], label: 'wf' },
];
for (const c of labelAttribution) {
  test(`the workflow label attributes the pod (${c.name}): ${c.label === null ? 'no' : 'yes'}`, () => {
    const pod = toPodMeta(wirePod({ ownerReferences: c.refs }), { ...opts, owner: c.owner ?? DEFAULTS.owner });
    assert.equal(pod.workflowLabel, c.label);
  });
}

test('the owner matches in any version of its group', () => {
  const pod = toPodMeta(wirePod({ ownerReferences: [workflowRef({ apiVersion: 'argoproj.io/v1beta1' })] }), opts);
  assert.equal(pod.owner?.uid, 'wf-uid');
});

test('a core-group owner (apiVersion "v1") matches an owner configured with group ""', () => {
  const owner = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap' };
  const pod = toPodMeta(wirePod({ ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: 'cm-uid' }] }), { ...opts, owner });
  assert.equal(pod.owner?.uid, 'cm-uid');
});

test('missing labels, finalizers and owner references trim to null and empty', () => {
  const pod = toPodMeta({ metadata: { namespace: 'ns', name: 'p', uid: 'u', resourceVersion: '1' } }, opts);
  assert.deepEqual(
    [pod.finalizers, pod.completedLabel, pod.workflowLabel, pod.owner, pod.deletionTimestamp],
    [[], null, null, null, null],
  );
});

test('malformed finalizers, labels and owner references are ignored, not trusted', () => {
  const meta = {
    namespace: 'ns',
    name: 'p',
    uid: 'u',
    resourceVersion: '1',
    finalizers: [FINALIZER, 7, null],
    labels: { 'workflows.argoproj.io/completed': true },
    ownerReferences: [null, { kind: 'Workflow', apiVersion: 'argoproj.io/v1alpha1', name: 'wf' }],
  } as unknown as ObjectMeta;
  const pod = toPodMeta({ metadata: meta }, opts);
  assert.deepEqual([pod.finalizers, pod.completedLabel, pod.owner], [[FINALIZER], null, null]);
});

test('an object without name, uid, namespace or resourceVersion is refused with a clear error', () => {
  for (const field of ['name', 'uid', 'namespace', 'resourceVersion'] as const) {
    const obj = wirePod();
    delete obj.metadata[field];
    assert.throws(() => toPodMeta(obj, opts), (err: unknown) => err instanceof InvalidObjectError && err.message.includes(`metadata.${field}`));
  }
  assert.throws(() => toPodMeta({} as MetaObject, opts), /no metadata/);
});

test('trimmed pods are frozen, finalizers and owner included', () => {
  const pod = toPodMeta(wirePod(), opts);
  assert.ok(Object.isFrozen(pod) && Object.isFrozen(pod.finalizers) && Object.isFrozen(pod.owner));
});

test('an owner table supplies the owner reference when name and UID match; the workflow label shares its name', () => {
  const held = Object.freeze({ name: 'wf', uid: 'wf-uid' });
  const owners = { shared: (name: string, uid: string) => (name === held.name && uid === held.uid ? held : undefined), firstSeen: () => 7 };
  const pod = toPodMeta(wirePod(), { ...opts, owners });
  assert.equal(pod.owner, held);
  assert.equal(pod.workflowLabel, 'wf');
  const other = toPodMeta(wirePod({ ownerReferences: [workflowRef({ name: 'wf-2' })] }), { ...opts, owners });
  assert.notEqual(other.owner, held);
  assert.deepEqual(other.owner, { name: 'wf-2', uid: 'wf-uid' }, 'the pod\'s own reference, never the table\'s under another name');
  assert.equal(other.workflowLabel, 'wf', 'the label as the pod carries it');
  assert.equal(pod.seenAt, 7, 'the table\'s first-seen time');
});

test('pods with the same finalizers share one frozen list; a different list is its own', () => {
  const [a, b] = [toPodMeta(wirePod(), opts), toPodMeta(wirePod({ name: 'wf-2' }), opts)];
  assert.equal(a.finalizers, b.finalizers);
  const c = toPodMeta(wirePod({ finalizers: [FINALIZER] }), opts);
  assert.notEqual(c.finalizers, a.finalizers);
  assert.deepEqual([a.finalizers, c.finalizers], [['example.com/keep', FINALIZER], [FINALIZER]]);
  assert.ok(Object.isFrozen(a.finalizers));
});

test('a workflow trims to identity, deletion time and its completed label', () => {
  const wf = toWorkflowMeta(
    {
      metadata: {
        namespace: 'ns',
        name: 'wf',
        uid: 'wf-uid',
        resourceVersion: '9',
        deletionTimestamp: '2026-11-22T05:00:00.000Z',
        labels: { 'workflows.argoproj.io/completed': 'true', 'workflows.argoproj.io/phase': 'Succeeded' },
      },
    },
    ARGO_CONVENTIONS,
  );
  assert.deepEqual(wf, {
    namespace: 'ns',
    name: 'wf',
    uid: 'wf-uid',
    resourceVersion: '9',
    deletionTimestamp: Date.UTC(2026, 10, 22, 5),
    completedLabel: 'true',
  });
});

test('groupOf splits an apiVersion', () => {
  assert.equal(groupOf('argoproj.io/v1alpha1'), 'argoproj.io');
  assert.equal(groupOf('v1'), '');
});
