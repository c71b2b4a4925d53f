import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Owners, OwnerEvidenceHeld } from './owners.ts';
import type { OwnerState } from '../decide/decide.ts';
import type { PodMeta, WorkflowMeta } from '../kube/objects.ts';
import { ApiError } from '../kube/errors.ts';
import { recordingLogger } from '../log.ts';
import { FakeClock } from '../queue/fake-clock.ts';
import type { OwnerConfirmation } from './owners.ts';
import { MAX_READING_AGE_MS, NamespaceReadings } from '../namespaces/namespace-deletions.ts';

const OWNER = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };
const notServed = () => new ApiError(404, 'NotFound', 'the server could not find the requested resource');

function workflow(over: Partial<WorkflowMeta> = {}): WorkflowMeta {
  return { namespace: 'ns', name: 'wf', uid: 'wf-1', resourceVersion: '1', deletionTimestamp: null, completedLabel: null, ...over };
}

function pod(over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns', name: 'wf-pod', uid: 'pod-1', resourceVersion: '1', deletionTimestamp: null, finalizers: ['workflows.argoproj.io/status'],
    completedLabel: 'false', workflowLabel: 'wf', owner: { name: 'wf', uid: 'wf-1' }, nodeId: null, ...over,
  };
}

/** owners builds an Owners over a one-entry cache and a scripted live read. */
function owners(o: { cached?: WorkflowMeta; read?: () => Promise<WorkflowMeta | null>; namespaces?: NamespaceReadings; settingsProven?: boolean } = {}) {
  const { logger, records } = recordingLogger();
  const clock = new FakeClock(1_000);
  const confirmations: OwnerConfirmation[] = [];
  const servedGauge: boolean[] = [];
  let servedAgain = 0;
  let reads = 0;
  const owners = new Owners({
    owner: OWNER,
    cache: { get: (namespace, name) => (o.cached !== undefined && `${namespace}/${name}` === 'ns/wf' ? o.cached : undefined) },
    read: async () => {
      reads++;
      return (o.read ?? (async () => null))();
    },
    metrics: { ownerConfirmation: (r) => confirmations.push(r), ownerResourceServed: (s) => servedGauge.push(s) },
    logger,
    outageConsequence: 'C',
    settingsProven: o.settingsProven ?? true,
    onServedAgain: () => servedAgain++,
    now: () => clock.now(),
    clock,
    quietMs: 60_000,
    ...(o.namespaces !== undefined ? { namespaces: o.namespaces } : {}),
  });
  return { owners, clock, records, confirmations, servedGauge, reads: () => reads, servedAgain: () => servedAgain };
}

/** confirmed is confirmedState's answer, or the name of what it threw. */
async function confirmed(o: Owners, p: PodMeta): Promise<OwnerState | string> {
  try {
    return await o.confirmedState(p, 0, 0);
  } catch (e) {
    return (e as Error).constructor.name;
  }
}

// The core rule, evidence by evidence, while the owner resource is served and while it is not.
const evidence: { name: string; setup: (o: Owners) => void; cached?: WorkflowMeta; read?: () => Promise<WorkflowMeta | null>; served: OwnerState | string; notServed: OwnerState | string }[] = [
  { name: 'the watch delivered its DELETE', setup: (o) => o.deleted('wf-1'), served: { kind: 'gone', because: 'deleted' }, notServed: { kind: 'gone', because: 'deleted' } },
  { name: 'the cache shows its deletionTimestamp', setup: () => {}, cached: workflow({ deletionTimestamp: 5 }), served: { kind: 'deleting' }, notServed: { kind: 'deleting' } },
  { name: 'a read found another UID under its name', setup: () => {}, read: async () => workflow({ uid: 'wf-2' }), served: { kind: 'gone', because: 'deleted' }, notServed: { kind: 'gone', because: 'deleted' } },
  { name: 'a read found nothing under its name', setup: () => {}, read: async () => null, served: { kind: 'gone', because: 'absent' }, notServed: 'OwnerEvidenceHeld' },
  { name: 'a read found it alive', setup: () => {}, read: async () => workflow(), served: { kind: 'alive', completed: 'no' }, notServed: { kind: 'alive', completed: 'no' } },
];

for (const e of evidence) {
  for (const whileServed of [true, false]) {
    test(`owners: ${e.name}, the resource ${whileServed ? 'served' : 'not served'}`, async () => {
      const h = owners({ ...(e.cached ? { cached: e.cached } : {}), ...(e.read ? { read: e.read } : {}) });
      if (!whileServed) h.owners.listPath.notServed(notServed());
      e.setup(h.owners);
      assert.deepEqual(await confirmed(h.owners, pod()), whileServed ? e.served : e.notServed);
    });
  }
}

test('owners: an owner found missing during an outage reads as unconfirmed from the cache, and as gone once the list works again', async () => {
  const h = owners();
  h.owners.listPath.notServed(notServed());
  assert.equal(await confirmed(h.owners, pod()), OwnerEvidenceHeld.name);
  assert.deepEqual(h.owners.cachedState(pod()), { kind: 'unconfirmed' });
  h.owners.listPath.succeeded();
  assert.deepEqual(h.owners.cachedState(pod()), { kind: 'gone', because: 'absent' });
  assert.deepEqual(await confirmed(h.owners, pod()), { kind: 'gone', because: 'absent' });
  assert.equal(h.reads(), 1, 'one read; what it found is remembered');
  assert.equal(h.servedAgain(), 1);
  assert.deepEqual(h.servedGauge, [false, true]);
});

test('owners: a read answered "resource not served" starts an outage; a read that works ends it', async () => {
  let answer: () => Promise<WorkflowMeta | null> = async () => {
    throw notServed();
  };
  const h = owners({ read: () => answer() });
  assert.equal(await confirmed(h.owners, pod()), 'ApiError');
  assert.equal(h.owners.served(), false);
  answer = async () => workflow();
  h.clock.advance(10_000); // the failed read is not reused
  assert.deepEqual(await confirmed(h.owners, pod()), { kind: 'alive', completed: 'no' });
  assert.equal(h.owners.served(), true);
  assert.deepEqual(h.confirmations, ['failed', 'alive']);
});

test('owners: a 403 on reads is said once per episode, counted, and ends with a read that works', async () => {
  let answer: () => Promise<WorkflowMeta | null> = async () => {
    throw new ApiError(403, 'Forbidden', 'workflows.argoproj.io "wf" is forbidden');
  };
  const h = owners({ read: () => answer() });
  for (let i = 0; i < 3; i++) assert.equal(await confirmed(h.owners, pod({ uid: `pod-${i}` })), 'ApiError');
  assert.equal(h.owners.readsForbidden(), true);
  answer = async () => workflow();
  await confirmed(h.owners, pod());
  assert.equal(h.owners.readsForbidden(), false);
  assert.deepEqual(h.confirmations, ['forbidden', 'forbidden', 'forbidden', 'alive']);
  assert.deepEqual(h.records.map((r) => r.level), ['error', 'info']);
});

// Until discovery proves the owner settings, a read may be of another resource than the owner's:
// no conclusion that would free a pod counts, whatever the read found.
const unproven: { name: string; read: () => Promise<WorkflowMeta | null>; want: OwnerState | string }[] = [
  { name: 'nothing under the name', read: async () => null, want: 'OwnerEvidenceHeld' },
  { name: 'another UID under the name', read: async () => workflow({ uid: 'wf-2' }), want: 'OwnerEvidenceHeld' },
  { name: 'the owner being deleted', read: async () => workflow({ deletionTimestamp: 5 }), want: 'OwnerEvidenceHeld' },
  { name: 'the owner completed', read: async () => workflow({ completedLabel: 'true' }), want: 'OwnerEvidenceHeld' },
  { name: 'the owner alive, not completed', read: async () => workflow(), want: { kind: 'alive', completed: 'no' } },
];
for (const u of unproven) {
  test(`owners: settings not yet proven, a read found ${u.name}: ${typeof u.want === 'string' ? 'held' : 'alive'}; once proven, it counts`, async () => {
    const h = owners({ read: u.read, settingsProven: false });
    assert.deepEqual(await confirmed(h.owners, pod()), u.want);
    h.owners.proveSettings();
    h.clock.advance(10_000);
    assert.notEqual(await confirmed(h.owners, pod()), 'OwnerEvidenceHeld');
  });
}

test('owners: settings not yet proven, a cached owner being deleted reads as unconfirmed', () => {
  const h = owners({ cached: workflow({ deletionTimestamp: 5 }), settingsProven: false });
  assert.deepEqual(h.owners.cachedState(pod()), { kind: 'unconfirmed' });
  h.owners.proveSettings();
  assert.deepEqual(h.owners.cachedState(pod()), { kind: 'deleting' });
});

test('owners: a gone owner is forgotten once no cached pod names it; a pod naming it later is confirmed by a read', async () => {
  const h = owners({ read: async () => null });
  h.owners.deleted('wf-1');
  assert.equal(h.owners.goneRemembered, 1);
  h.owners.forget('wf-1');
  assert.equal(h.owners.goneRemembered, 0);
  assert.deepEqual(h.owners.cachedState(pod()), { kind: 'unconfirmed' });
  assert.deepEqual(await confirmed(h.owners, pod()), { kind: 'gone', because: 'absent' });
  assert.equal(h.reads(), 1);
});

// The namespace rule: the pod's namespace seen being deleted dooms its owner (src/namespaces/).
const CREATED = Date.parse('2026-11-22T10:00:00Z');
/** deletingSince is a reading made before any pod was observed (observation times here are 0 and on). */
const deletingSince = (ms: number | null) => {
  const n = new NamespaceReadings();
  n.set('ns', ms, -1);
  return n;
};
const DELETED = CREATED + 60_000;
const namespaceCases: { name: string; namespaces?: NamespaceReadings; pod: PodMeta; cached?: WorkflowMeta; read?: () => Promise<WorkflowMeta | null>; outage?: boolean; want: OwnerState | string; reads: number }[] = [
  { name: 'a live owner in a namespace being deleted: doomed, without a read', namespaces: deletingSince(CREATED + 60_000), pod: pod({ createdAt: CREATED }), cached: workflow(), want: { kind: 'namespace-deleting' }, reads: 0 },
  { name: 'an owner missing from the cache, namespace being deleted: doomed, without a read', namespaces: deletingSince(DELETED), pod: pod({ createdAt: CREATED }), read: async () => workflow(), want: { kind: 'namespace-deleting' }, reads: 0 },
  { name: 'an unattributable pod in a namespace being deleted: doomed too', namespaces: deletingSince(DELETED), pod: pod({ createdAt: CREATED, owner: null, workflowLabel: null }), want: { kind: 'namespace-deleting' }, reads: 0 },
  { name: 'during an owner outage the namespace still speaks', namespaces: deletingSince(DELETED), pod: pod({ createdAt: CREATED }), outage: true, want: { kind: 'namespace-deleting' }, reads: 0 },
  { name: 'an owner being deleted stays owner-gone', namespaces: deletingSince(DELETED), pod: pod({ createdAt: CREATED }), cached: workflow({ deletionTimestamp: 5 }), want: { kind: 'deleting' }, reads: 0 },
  { name: 'a pod created after the deletion began belongs to a namespace created again under the name', namespaces: deletingSince(CREATED - 1_000), pod: pod({ createdAt: CREATED }), read: async () => workflow(), want: { kind: 'alive', completed: 'no' }, reads: 1 },
  { name: 'a pod whose creation time is unknown is not doomed', namespaces: deletingSince(DELETED), pod: pod(), read: async () => workflow(), want: { kind: 'alive', completed: 'no' }, reads: 1 },
  { name: 'a namespace not seen being deleted changes nothing', namespaces: deletingSince(null), pod: pod({ createdAt: CREATED }), read: async () => workflow(), want: { kind: 'alive', completed: 'no' }, reads: 1 },
  { name: 'with the rule off (no namespaces given) nothing is doomed', pod: pod({ createdAt: CREATED }), read: async () => workflow(), want: { kind: 'alive', completed: 'no' }, reads: 1 },
];
for (const c of namespaceCases) {
  test(`owners, namespace rule: ${c.name}`, async () => {
    const h = owners({ ...(c.cached ? { cached: c.cached } : {}), ...(c.read ? { read: c.read } : {}), ...(c.namespaces ? { namespaces: c.namespaces } : {}) });
    if (c.outage === true) h.owners.listPath.notServed(notServed());
    if (typeof c.want !== 'string' && c.want.kind === 'namespace-deleting') assert.deepEqual(h.owners.cachedState(c.pod), c.want, 'the cache alone says so');
    assert.deepEqual(await confirmed(h.owners, c.pod), c.want);
    assert.equal(h.reads(), c.reads);
  });
}

// The namespace rule's tie and age (src/namespaces/namespace-deletions.ts): a reading renewed first.
const nsObject = (deletionTimestamp?: string) => ({ metadata: { name: 'ns', uid: 'u', resourceVersion: '1', ...(deletionTimestamp !== undefined ? { deletionTimestamp } : {}) } });
const CREATED_AT = new Date(CREATED).toISOString();
/** renewing builds Owners whose namespace readings share its clock and read the namespace through `get`. */
function renewing(get: () => Promise<ReturnType<typeof nsObject> | null>) {
  const clock = { now: () => 0 };
  let gets = 0;
  const n = new NamespaceReadings({ now: () => clock.now(), get: async () => (gets++, get()) });
  const h = owners({ read: async () => workflow(), namespaces: n });
  clock.now = () => h.clock.now();
  return { ...h, n, gets: () => gets };
}

test('owners, namespace rule: a namespace deleted and created again within the second the pod was created does not doom it; the reading is renewed first', async () => {
  const h = renewing(async () => nsObject()); // the namespace now under the name: the new one, not being deleted
  h.n.set('ns', CREATED, 500); // read before the pod was observed: the old namespace, deleted in the pod's second
  assert.deepEqual(h.owners.cachedState(pod({ createdAt: CREATED }), 800), { kind: 'unconfirmed' }, 'the cache alone cannot tell');
  assert.deepEqual(await h.owners.confirmedState(pod({ createdAt: CREATED }), 800, 0), { kind: 'alive', completed: 'no' });
  assert.equal(h.gets(), 1);
  assert.deepEqual(h.n.reading('ns'), { deletingSince: null, readAt: 1_000 });
});

test('owners, namespace rule: a tie renewed by a read that still finds the namespace being deleted dooms the pod', async () => {
  const h = renewing(async () => nsObject(CREATED_AT));
  h.n.set('ns', CREATED, 500);
  assert.deepEqual(await h.owners.confirmedState(pod({ createdAt: CREATED }), 800, 0), { kind: 'namespace-deleting' });
  assert.equal(h.gets(), 1);
  assert.equal(h.reads(), 0, 'no owner read');
  assert.deepEqual(h.owners.cachedState(pod({ createdAt: CREATED }), 800), { kind: 'namespace-deleting' }, 'the renewed reading speaks from the cache');
});

test('owners, namespace rule: a reading older than its bound is renewed before it dooms a pod, and a renewal that fails dooms nothing', async () => {
  const gone = renewing(async () => null);
  gone.n.set('ns', CREATED + 60_000, 0);
  gone.clock.advance(MAX_READING_AGE_MS + 1);
  assert.deepEqual(gone.owners.cachedState(pod({ createdAt: CREATED }), 10), { kind: 'unconfirmed' });
  assert.deepEqual(await gone.owners.confirmedState(pod({ createdAt: CREATED }), 10, 0), { kind: 'alive', completed: 'no' }, 'gone, and created again');
  assert.equal(gone.gets(), 1);

  const failing = renewing(async () => {
    throw new ApiError(503, 'ServiceUnavailable', 'down');
  });
  failing.n.set('ns', CREATED + 60_000, 0);
  failing.clock.advance(MAX_READING_AGE_MS + 1);
  assert.deepEqual(await failing.owners.confirmedState(pod({ createdAt: CREATED }), 10, 0), { kind: 'alive', completed: 'no' });
  assert.ok(failing.records.some((r) => r.msg.startsWith('the namespace could not be read again')));
});
