import { test } from 'node:test';
import assert from 'node:assert/strict';
import { removalPatch } from './removal-patch.ts';
import type { PodMeta } from '../kube/objects.ts';

const OURS = 'workflows.argoproj.io/status';

function pod(finalizers: string[]): PodMeta {
  return {
    namespace: 'ns', name: 'p', uid: 'u', resourceVersion: '4711', deletionTimestamp: null,
    finalizers, completedLabel: null, workflowLabel: 'wf', owner: null, nodeId: null,
  };
}

const cases: Array<{ name: string; finalizers: string[]; want: string[] | null }> = [
  { name: 'ours alone: an empty list', finalizers: [OURS], want: [] },
  { name: 'ours first: the others keep their order', finalizers: [OURS, 'b.io/x', 'a.io/y'], want: ['b.io/x', 'a.io/y'] },
  { name: 'ours in the middle', finalizers: ['z.io/1', OURS, 'a.io/2'], want: ['z.io/1', 'a.io/2'] },
  { name: 'ours last', finalizers: ['z.io/1', 'a.io/2', OURS], want: ['z.io/1', 'a.io/2'] },
  { name: 'ours absent: no patch at all', finalizers: ['z.io/1'], want: null },
  { name: 'no finalizers: no patch at all', finalizers: [], want: null },
  { name: 'look-alike finalizers are not ours', finalizers: [`${OURS}2`, 'workflows.argoproj.io/other', OURS], want: [`${OURS}2`, 'workflows.argoproj.io/other'] },
];

for (const c of cases) {
  test(`removalPatch: ${c.name}`, () => {
    const patch = removalPatch(pod(c.finalizers), OURS);
    if (c.want === null) assert.equal(patch, null);
    else assert.deepEqual(patch, { metadata: { resourceVersion: '4711', finalizers: c.want } });
  });
}

test('removalPatch: always carries the resourceVersion the list was read at', () => {
  assert.equal(removalPatch({ ...pod([OURS]), resourceVersion: '99' }, OURS)?.metadata.resourceVersion, '99');
});

test('removalPatch: does not modify the cached pod', () => {
  const p = pod(['a.io/x', OURS]);
  const before = [...p.finalizers];
  removalPatch(p, OURS);
  assert.deepEqual(p.finalizers, before);
});
