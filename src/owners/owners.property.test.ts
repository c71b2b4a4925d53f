// Property-based test of owner matching (docs/testing.md, "Property-based tests"): a pod's owner
// is the Workflow with the UID of its owner reference. Whatever the cache holds under the owner's
// name with another UID (being deleted, completed, or both), and whatever DELETE events other UIDs
// get, a pod whose owner is alive and not completed is never concluded gone, deleting, or
// completed; and a live read that finds another UID under the name concludes the owner gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Owners } from './owners.ts';
import type { PodMeta, WorkflowMeta } from '../kube/objects.ts';
import { DEFAULTS } from '../config/settings.ts';
import { FakeClock } from '../queue/fake-clock.ts';
import { silentLogger } from '../log.ts';

const OWNER_UID = 'wf-owner';

const label = fc.constantFrom(null, 'true', 'false');
const sameNamed: fc.Arbitrary<WorkflowMeta> = fc.record(
  {
    namespace: fc.constant('ns'),
    name: fc.constant('wf'),
    uid: fc.constantFrom('wf-older', 'wf-newer', ''),
    resourceVersion: fc.stringMatching(/^[0-9]{1,6}$/),
    deletionTimestamp: fc.option(fc.integer({ min: 0, max: 2_000_000_000_000 }), { nil: null }),
    completedLabel: label,
  },
  { noNullPrototype: true },
);

const pod: fc.Arbitrary<PodMeta> = fc.record(
  {
    namespace: fc.constant('ns'),
    name: fc.constant('wf-pod'),
    uid: fc.constant('pod-1'),
    resourceVersion: fc.constant('7'),
    deletionTimestamp: fc.option(fc.nat(), { nil: null }),
    createdAt: fc.option(fc.nat(), { nil: null }),
    finalizers: fc.constant([DEFAULTS.finalizer]),
    completedLabel: label,
    workflowLabel: fc.constantFrom('wf', 'another', null),
    owner: fc.constant({ name: 'wf', uid: OWNER_UID }),
    nodeId: fc.constant(null),
  },
  { noNullPrototype: true },
);

function owners(cached: WorkflowMeta | undefined, live: WorkflowMeta | null, deleted: readonly string[]): Owners {
  const clock = new FakeClock(1_000);
  const o = new Owners({
    owner: DEFAULTS.owner,
    cache: { get: (namespace, name) => (namespace === 'ns' && name === 'wf' ? cached : undefined) },
    read: async () => live,
    metrics: { ownerConfirmation: () => {}, ownerResourceServed: () => {} },
    logger: silentLogger(),
    outageConsequence: 'pods wait',
    settingsProven: true,
    now: () => clock.now(),
    clock,
  });
  for (const uid of deleted) o.deleted(uid);
  return o;
}

test('property: a same-named Workflow with another UID, in the cache or behind a DELETE event, is never taken for a live owner that has not completed', async () => {
  const alive: WorkflowMeta = { namespace: 'ns', name: 'wf', uid: OWNER_UID, resourceVersion: '9', deletionTimestamp: null, completedLabel: null };
  await fc.assert(
    fc.asyncProperty(pod, fc.option(sameNamed, { nil: undefined }), fc.subarray(['wf-older', 'wf-newer']), async (p, cached, deleted) => {
      const o = owners(cached, alive, deleted);
      const c = o.cachedState(p, 0);
      assert.ok(c.kind === 'unconfirmed' || (c.kind === 'alive' && c.completed === 'no'), `cached: ${JSON.stringify(c)}`);
      assert.deepEqual({ ...(await o.confirmedState(p, 0, 0)) }, { kind: 'alive', completed: 'no' });
      o.stop();
    }),
    { numRuns: 300 },
  );
});

test('property: a live read that finds another UID under the owner\'s name concludes the owner gone, whatever that Workflow\'s state', async () => {
  await fc.assert(
    fc.asyncProperty(pod, fc.option(sameNamed, { nil: undefined }), sameNamed, async (p, cached, live) => {
      const o = owners(cached, live, []);
      assert.deepEqual({ ...(await o.confirmedState(p, 0, 0)) }, { kind: 'gone', because: 'deleted' });
      o.stop();
    }),
    { numRuns: 300 },
  );
});
