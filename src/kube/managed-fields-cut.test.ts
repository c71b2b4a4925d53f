import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { managedFieldsCut } from './managed-fields-cut.ts';
import { parseWatchEvent } from './watch-stream.ts';

/** MANAGED is a pod's managed fields as the server writes them: a creator's and a patcher's. */
const MANAGED = [
  {
    manager: 'argo',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-28T10:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': {
        'f:finalizers': { '.': {}, 'v:"workflows.argoproj.io/status"': {} },
        'f:labels': { '.': {}, 'f:workflows.argoproj.io/workflow': {} },
        'f:ownerReferences': { '.': {}, 'k:{"uid":"6f1c2a3e-0b4d-4c5e-8f60-000000000001"}': {} },
      },
      'f:spec': { 'f:containers': { 'k:{"name":"main"}': { '.': {}, 'f:env': { 'k:{"name":"ARGO_TEMPLATE"}': { '.': {}, 'f:name': {}, 'f:value': {} } } } } },
    },
  },
  { manager: 'finalizer-sweeper', operation: 'Update', apiVersion: 'v1', time: '2026-11-28T10:00:01Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:finalizers': {} } } },
];

/** podMeta is a pod's metadata in the Go struct's order, managedFields last, as the server writes it. */
function podMeta(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'wf-1-p1',
    namespace: 'ns',
    uid: '9a8b7c6d-5e4f-4a3b-9c2d-000000000001',
    resourceVersion: '1001',
    creationTimestamp: '2026-11-28T10:00:00Z',
    deletionTimestamp: '2026-11-28T10:05:00Z',
    deletionGracePeriodSeconds: 0,
    labels: { 'workflows.argoproj.io/workflow': 'wf-1' },
    annotations: { 'workflows.argoproj.io/node-id': 'wf-1-123' },
    ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: 'wf-1', uid: '6f1c2a3e-0b4d-4c5e-8f60-000000000001', controller: true }],
    finalizers: ['workflows.argoproj.io/status'],
    ...over,
    managedFields: MANAGED,
  };
}

function line(metadata: unknown, type = 'MODIFIED'): string {
  return JSON.stringify({ type, object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata } });
}

/** withoutManaged is the whole line's parse with object.metadata.managedFields taken off. */
function withoutManaged(l: string): unknown {
  const ev = JSON.parse(l) as { object: { metadata: Record<string, unknown> } };
  delete ev.object.metadata['managedFields'];
  return ev;
}

/** decoded is what parseWatchEvent makes of the line, and whether it left the managed fields out. */
function decoded(l: string): { event: unknown; cut: boolean } {
  const ev = parseWatchEvent<{ metadata: Record<string, unknown> }>(Buffer.from(l));
  return { event: ev, cut: !('managedFields' in ev.object.metadata) };
}

test('a pod line as the server writes it is cut before its managed fields, and reads as the whole line less them', () => {
  const l = line(podMeta());
  assert.equal(managedFieldsCut(Buffer.from(l)), l.indexOf(',"managedFields"'));
  assert.deepEqual(decoded(l), { event: withoutManaged(l), cut: true });
  assert.deepEqual(decoded(`  ${l} \r`), { event: withoutManaged(l), cut: true }, 'whitespace around the line');
});

test('hostile labels, annotations and finalizers never move the cut nor hide a field', () => {
  const hostile = [
    ',"managedFields":[',
    '","managedFields":[',
    '"},"managedFields":[]}}}',
    '\\',
    '\\"',
    '\\\\",',
    ']}}}',
    '\u0022managedFields\u0022:[',
    '✓ Zürich ,"managedFields":[ ✓',
  ];
  for (const h of hostile) {
    const cases = [
      podMeta({ labels: { managedFields: h, [h]: h } }),
      podMeta({ annotations: { managedFields: h, [`${h}`]: '[' } }),
      podMeta({ finalizers: [h, 'workflows.argoproj.io/status', h] }),
      podMeta({ name: h, ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: h, uid: h, controller: true }] }),
    ];
    for (const meta of cases) {
      const l = line(meta);
      const { event, cut } = decoded(l);
      assert.deepEqual(event, withoutManaged(l), `hostile ${JSON.stringify(h)}`);
      assert.equal(cut, true, 'the real managed fields are still cut');
    }
  }
});

test('a line the cut cannot vouch for is parsed whole', () => {
  const meta = podMeta();
  const { managedFields, ...rest } = meta;
  const shapes: Array<[string, string]> = [
    // managedFields not last in metadata: the fields after it must be read.
    ['not last', line({ ...rest, managedFields, finalizersAfter: ['x'] })],
    ['fields after it', JSON.stringify({ type: 'MODIFIED', object: { metadata: { ...rest, managedFields }, spec: { finalizers: ['x'] } } })],
    ['event fields after it', JSON.stringify({ object: { metadata: meta }, type: 'MODIFIED' })],
    ['spaced', line(meta).replace('"managedFields":[', '"managedFields": [')],
    ['escaped key', line(meta).replace('"managedFields"', '"managed\\u0046ields"')],
    ['four deep', JSON.stringify({ type: 'MODIFIED', object: { metadata: { ...rest, labels: { managedFields } } } })],
    ['a key in a label', line({ ...rest, labels: { a: '1', managedFields: [1] }, finalizers: ['f'] })],
  ];
  for (const [name, l] of shapes) {
    const ev = parseWatchEvent(Buffer.from(l));
    assert.deepEqual(ev, JSON.parse(l), name);
  }
});

test('a line cut short inside its managed fields is not read as whole', () => {
  const l = line(podMeta());
  const short = l.slice(0, l.indexOf('"fieldsV1"'));
  assert.equal(managedFieldsCut(Buffer.from(short)), -1);
  assert.throws(() => parseWatchEvent(Buffer.from(short)), /malformed watch event \(not JSON\)/);
  // Three braces at its end do not make it whole either.
  assert.throws(() => parseWatchEvent(Buffer.from(`${short}}}}`)), /malformed watch event/);
});

test('managedFieldsCut follows strings in the managed fields: brackets and escapes in them do not count', () => {
  const tricky = [{ manager: ']}}}', operation: 'Update', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:a]b': {}, 'f:\\"[': {}, 'f:"]': {} } } } }];
  const l = line({ ...podMeta(), managedFields: tricky });
  assert.equal(managedFieldsCut(Buffer.from(l)), l.indexOf(',"managedFields"'));
  assert.deepEqual(decoded(l), { event: withoutManaged(l), cut: true });
  const unbalanced = l.replace('"f:a]b":{}', '"f:a]b":{}]');
  assert.equal(managedFieldsCut(Buffer.from(unbalanced)), -1);
});

// Strings with the characters that matter here, and the fragments an attacker would try.
const nasty = fc.oneof(
  fc.string({ unit: fc.constantFrom('"', '\\', ',', ':', '[', ']', '{', '}', 'm', 'a', 'é', '✓', '\u0000', '\n') }),
  fc.constantFrom(',"managedFields":[', '"managedFields"', ']}}}', '\\', '"'),
  fc.string(),
);
const json = fc.jsonValue({ maxDepth: 3 });

test('property: whatever the strings and the managed fields, the event reads as the whole line less its managed fields', () => {
  fc.assert(
    fc.property(
      fc.dictionary(nasty, nasty, { maxKeys: 4 }),
      fc.dictionary(nasty, nasty, { maxKeys: 4 }),
      fc.array(nasty, { maxLength: 3 }),
      nasty,
      fc.oneof(fc.array(json, { maxLength: 3 }), json),
      fc.boolean(),
      (labels, annotations, finalizers, name, managed, extraAfter) => {
        const meta: Record<string, unknown> = { ...podMeta({ name, labels, annotations, finalizers }), managedFields: managed };
        if (extraAfter) meta['after'] = finalizers;
        const l = line(meta);
        const { event } = decoded(l);
        assert.deepEqual(event, withoutManagedIfArrayLast(l));
      },
    ),
    { numRuns: 500 },
  );
});

/** withoutManagedIfArrayLast: the whole parse, less managedFields only where it is an array and the last field. */
function withoutManagedIfArrayLast(l: string): unknown {
  const ev = JSON.parse(l) as { object: { metadata: Record<string, unknown> } };
  const keys = Object.keys(ev.object.metadata);
  if (keys.at(-1) === 'managedFields' && Array.isArray(ev.object.metadata['managedFields'])) delete ev.object.metadata['managedFields'];
  return ev;
}
