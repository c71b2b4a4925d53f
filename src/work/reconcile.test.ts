import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Reconciler, type Failure, type FailureKind, type ReconcilerOptions } from './reconcile.ts';
import type { OwnerState } from '../decide/decide.ts';
import type { PodMeta } from '../kube/objects.ts';
import type { RemovalPatch } from './removal-patch.ts';
import { classify as classifyApiError } from './classify.ts';
import { OwnerEvidenceHeld } from '../owners/owners.ts';
import type { RecordVerdict } from '../argo/workflow-records.ts';

const OURS = 'workflows.argoproj.io/status';

function pod(over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns', name: 'p', uid: 'pod-1', resourceVersion: '10', deletionTimestamp: null,
    finalizers: ['a.io/first', OURS], completedLabel: 'true', workflowLabel: 'wf', owner: { name: 'wf', uid: 'wf-1' }, nodeId: null, ...over,
  };
}

class ApiFailure extends Error {
  readonly kind: FailureKind;
  readonly retryAfterMs: number | null;
  constructor(kind: FailureKind, retryAfterMs: number | null = null) {
    super(`api said ${kind}`);
    this.kind = kind;
    this.retryAfterMs = retryAfterMs;
  }
}

const classify = (err: unknown): Failure =>
  err instanceof ApiFailure ? { kind: err.kind, retryAfterMs: err.retryAfterMs, message: err.message } : { kind: 'transient', retryAfterMs: null, message: String(err) };

/** harness wires a Reconciler to scripted API answers and records every write. */
function harness(opts: { cached?: PodMeta; owner?: OwnerState; confirmed?: OwnerState; patches?: Array<ApiFailure | null>; reads?: Array<PodMeta | null>; over?: Partial<ReconcilerOptions> }) {
  const writes: RemovalPatch[] = [];
  const patches = [...(opts.patches ?? [])];
  const reads = [...(opts.reads ?? [])];
  let confirmations = 0;
  const r = new Reconciler({
    pods: { get: (key) => (key === 'ns/p' ? opts.cached : undefined) },
    observedAt: () => 0,
    owners: {
      cachedState: () => opts.owner ?? { kind: 'alive', completed: 'no' },
      confirmedState: async () => {
        confirmations++;
        return opts.confirmed ?? opts.owner ?? { kind: 'alive', completed: 'no' };
      },
      now: () => 1,
    },
    api: {
      patch: async (_ns, _name, patch) => {
        writes.push(patch);
        const answer = patches.shift() ?? null;
        if (answer !== null) throw answer;
        return {};
      },
      read: async () => {
        const next = reads.shift();
        if (next === undefined) throw new Error('unexpected read');
        return next;
      },
    },
    classify,
    policy: { finalizer: OURS, forceAfterMs: null, nodeStatus: 'off' },
    dryRun: false,
    reasons: null,
    minRetryDelayMs: 1,
    ...opts.over,
  });
  return { r, writes, confirmations: () => confirmations };
}

test('reconcile: a recorded pod loses exactly our finalizer, with the cached resourceVersion', async () => {
  const h = harness({ cached: pod() });
  assert.deepEqual(await h.r.reconcile('ns/p', 2), { kind: 'removed', reason: 'recorded', evidence: 'pod-label', attempts: 1, conflicts: 0, pod: pod() });
  assert.deepEqual(h.writes, [{ metadata: { resourceVersion: '10', finalizers: ['a.io/first'] } }]);
});

test('reconcile: a pod no longer in the cache is already gone, and nothing is written', async () => {
  const h = harness({});
  assert.equal((await h.r.reconcile('ns/p', 0)).kind, 'already-gone');
  assert.equal(h.writes.length, 0);
});

test('reconcile: a pod of a live owner that has not recorded it is kept, and nothing is written', async () => {
  const h = harness({ cached: pod({ completedLabel: 'false' }) });
  assert.deepEqual(await h.r.reconcile('ns/p', 2), { kind: 'kept', why: 'owner-alive-unrecorded', reason: null, conflicts: 0 });
  assert.equal(h.writes.length, 0);
});

test('reconcile: an owner missing from the cache is confirmed live before the removal', async () => {
  const h = harness({ cached: pod({ completedLabel: 'false' }), owner: { kind: 'unconfirmed' }, confirmed: { kind: 'gone', because: 'absent' } });
  assert.equal((await h.r.reconcile('ns/p', 0)).kind, 'removed');
  assert.equal(h.confirmations(), 1);
});

test('reconcile: an owner missing from the cache but alive in the API keeps the pod', async () => {
  const h = harness({ cached: pod({ completedLabel: 'false' }), owner: { kind: 'unconfirmed' }, confirmed: { kind: 'alive', completed: 'no' } });
  assert.equal((await h.r.reconcile('ns/p', 0)).kind, 'kept');
  assert.equal(h.writes.length, 0);
});

test('reconcile: a 409 re-reads the pod and retries with the new resourceVersion, keeping the other party\'s new finalizer', async () => {
  const fresh = pod({ resourceVersion: '11', finalizers: ['a.io/first', OURS, 'b.io/added'] });
  const h = harness({ cached: pod(), patches: [new ApiFailure('conflict'), null], reads: [fresh] });
  assert.deepEqual(await h.r.reconcile('ns/p', 2), { kind: 'removed', reason: 'recorded', evidence: 'pod-label', attempts: 2, conflicts: 1, pod: fresh });
  assert.deepEqual(h.writes[1], { metadata: { resourceVersion: '11', finalizers: ['a.io/first', 'b.io/added'] } });
});

test('reconcile: after a 409 the pod is decided again, and kept when it no longer qualifies', async () => {
  const fresh = pod({ resourceVersion: '11', completedLabel: 'false' });
  const h = harness({ cached: pod(), patches: [new ApiFailure('conflict')], reads: [fresh] });
  assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'kept');
  assert.equal(h.writes.length, 1);
});

test('reconcile: after a 409, our finalizer already removed by someone else means already gone', async () => {
  const fresh = pod({ resourceVersion: '11', finalizers: ['a.io/first'] });
  const h = harness({ cached: pod(), patches: [new ApiFailure('conflict')], reads: [fresh] });
  assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'already-gone');
  assert.equal(h.writes.length, 1);
});

test('reconcile: after a 409, a pod that vanished is already gone', async () => {
  const h = harness({ cached: pod(), patches: [new ApiFailure('conflict')], reads: [null] });
  assert.deepEqual(await h.r.reconcile('ns/p', 2), { kind: 'already-gone', reason: 'recorded', conflicts: 1 });
});

test('reconcile: a 404 on the patch is already gone', async () => {
  const h = harness({ cached: pod(), patches: [new ApiFailure('not-found')] });
  assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'already-gone');
});

test('reconcile: a 429 goes back on the queue after Retry-After', async () => {
  const h = harness({ cached: pod(), patches: [new ApiFailure('throttled', 3000)] });
  const out = await h.r.reconcile('ns/p', 2);
  assert.equal(out.kind, 'retry');
  assert.equal(out.kind === 'retry' && out.afterMs, 3000);
});

test('reconcile: transient errors are retried in place, then handed back for the key\'s backoff', async () => {
  const h = harness({ cached: pod(), patches: Array.from({ length: 10 }, () => new ApiFailure('transient')), over: { retries: 2 } });
  const out = await h.r.reconcile('ns/p', 2);
  assert.equal(out.kind, 'retry');
  assert.equal(out.kind === 'retry' && out.afterMs, null);
  assert.equal(h.writes.length, 3);
});

test('reconcile: a transient error followed by success removes', async () => {
  const h = harness({ cached: pod(), patches: [new ApiFailure('transient'), null] });
  assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'removed');
});

test('reconcile: a refusal of the removal (403, 422) fails without retrying', async () => {
  for (const kind of ['forbidden', 'rejected'] as const) {
    const h = harness({ cached: pod(), patches: [new ApiFailure(kind), null] });
    assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'failed', kind);
    assert.equal(h.writes.length, 1);
  }
});

test('reconcile: an owner read answered 403 is no verdict on the pod: the key waits and is tried again, with a message that names the missing permission', async () => {
  let allowed = false;
  const owners = {
    cachedState: (): OwnerState => ({ kind: 'unconfirmed' }),
    confirmedState: async (): Promise<OwnerState> => {
      if (!allowed) throw new ApiFailure('forbidden');
      return { kind: 'gone', because: 'absent' };
    },
    now: () => 0,
  };
  const h = harness({ cached: pod({ completedLabel: 'false' }), over: { owners } });
  const out = await h.r.reconcile('ns/p', 0);
  assert.equal(out.kind, 'retry');
  assert.match('error' in out ? out.error : '', /owner read forbidden \(403\), grant get on the owner resource/);
  assert.equal(h.writes.length, 0);
  allowed = true;
  assert.equal((await h.r.reconcile('ns/p', 0)).kind, 'removed', 'once granted, the orphan goes');
});

test('reconcile: a refused owner read fails without writing', async () => {
  const owners = {
    cachedState: (): OwnerState => ({ kind: 'unconfirmed' }),
    confirmedState: async (): Promise<OwnerState> => {
      throw new ApiFailure('rejected');
    },
    now: () => 0,
  };
  const h = harness({ cached: pod({ completedLabel: 'false' }), over: { owners } });
  assert.equal((await h.r.reconcile('ns/p', 0)).kind, 'failed');
  assert.equal(h.writes.length, 0);
});

// A pod Argo labelled recorded needs no owner: an owner that cannot be read holds it back for no
// reason (Argo's CRD missing at start). Without that label, the same failures write nothing.
const unreadableOwner: { name: string; failure: () => Error }[] = [
  { name: 'the owner resource not served', failure: () => new ApiFailure('not-served') },
  { name: 'owner evidence held', failure: () => new OwnerEvidenceHeld() },
  { name: 'the owner read forbidden', failure: () => new ApiFailure('forbidden') },
  { name: 'the owner read refused', failure: () => new ApiFailure('rejected') },
];
for (const u of unreadableOwner) {
  for (const labelled of [true, false]) {
    test(`reconcile: ${u.name}: a pod ${labelled ? 'labelled recorded is freed on its label' : 'not labelled recorded keeps our finalizer'}`, async () => {
      const owners = {
        cachedState: (): OwnerState => ({ kind: 'unconfirmed' }),
        confirmedState: async (): Promise<OwnerState> => {
          throw u.failure();
        },
        now: () => 0,
      };
      const h = harness({ cached: pod({ completedLabel: labelled ? 'true' : 'false' }), over: { owners, classify: (e) => (e instanceof ApiFailure ? classify(e) : classifyApiError(e)) } });
      const out = await h.r.reconcile('ns/p', 0);
      if (labelled) {
        assert.deepEqual([out.kind, 'reason' in out ? out.reason : null, 'evidence' in out ? out.evidence : null], ['removed', 'recorded', 'pod-label']);
        assert.deepEqual(h.writes, [{ metadata: { resourceVersion: '10', finalizers: ['a.io/first'] } }]);
      } else {
        assert.notEqual(out.kind, 'removed');
        assert.equal(h.writes.length, 0);
      }
    });
  }
}

test('reconcile: dry run decides and writes nothing', async () => {
  const h = harness({ cached: pod(), over: { dryRun: true } });
  assert.deepEqual(await h.r.reconcile('ns/p', 2), { kind: 'dry-run', reason: 'recorded', evidence: 'pod-label', conflicts: 0 });
  assert.equal(h.writes.length, 0);
});

test('reconcile: a reason outside --reason is kept', async () => {
  const h = harness({ cached: pod(), over: { reasons: new Set(['owner-gone'] as const) } });
  assert.deepEqual(await h.r.reconcile('ns/p', 2), { kind: 'kept', why: 'reason-filtered', reason: 'recorded', conflicts: 0 });
  assert.equal(h.writes.length, 0);
});

test('reconcile: --max-removals stops writes once the quota is spent, and a failed write gives its slot back', async () => {
  let left = 1;
  const quota = { take: () => (left > 0 ? (left--, true) : false), giveBack: () => void left++ };
  const h = harness({ cached: pod(), patches: [new ApiFailure('not-found'), null], over: { quota } });
  assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'already-gone');
  assert.equal(left, 1, 'the 404 did not use up the quota');
  assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'removed');
  assert.deepEqual(await h.r.reconcile('ns/p', 2), { kind: 'kept', why: 'max-removals', reason: 'recorded', conflicts: 0 });
  assert.equal(h.writes.length, 2);
});

// An owner read that says the resource is not served, or an owner found missing while it is not
// (the conclusion held back by src/owners), ends the attempt: the key backs off, nothing is written.
const notServedReads: Array<[string, () => Error]> = [
  ['an owner read answered "resource not served"', () => new ApiFailure('not-served')],
  ['an owner conclusion held back while the owner resource is not served', () => new OwnerEvidenceHeld()],
];
for (const [name, error] of notServedReads) {
  test(`reconcile: ${name} ends the attempt as a retry at once, and nothing is written`, async () => {
    let reads = 0;
    const h = harness({
      cached: pod({ completedLabel: null }),
      over: {
        owners: {
          cachedState: () => ({ kind: 'unconfirmed' }),
          confirmedState: async () => {
            reads++;
            throw error();
          },
          now: () => 1,
        },
        classify: (err) => (err instanceof ApiFailure ? classify(err) : classifyApiError(err)),
      },
    });
    const out = await h.r.reconcile('ns/p', 0);
    assert.deepEqual([out.kind, 'afterMs' in out ? out.afterMs : undefined], ['retry', null]);
    assert.equal(reads, 1, 'not retried in place: the key backs off');
    assert.deepEqual(h.writes, []);
  });
}

test('reconcile: a patch answered "resource not served" is retried later, never taken as "already gone"', async () => {
  const h = harness({ cached: pod(), patches: [new ApiFailure('not-served')] });
  assert.equal((await h.r.reconcile('ns/p', 2)).kind, 'retry');
});

test('reconcile: a 429 to an owner read or to the re-read after a 409 waits its Retry-After, not an in-place retry', async () => {
  let reads = 0;
  const owner = harness({
    cached: pod({ completedLabel: null }),
    over: {
      owners: {
        cachedState: () => ({ kind: 'unconfirmed' }),
        confirmedState: async () => {
          reads++;
          throw new ApiFailure('throttled', 7_000);
        },
        now: () => 1,
      },
    },
  });
  const out = await owner.r.reconcile('ns/p', 0);
  assert.deepEqual([out.kind, out.kind === 'retry' ? out.afterMs : null, reads], ['retry', 7_000, 1]);
  assert.deepEqual(owner.writes, []);

  const reread = harness({ cached: pod(), patches: [new ApiFailure('conflict')], over: { api: {
    patch: async () => {
      throw new ApiFailure('conflict');
    },
    read: async () => {
      throw new ApiFailure('throttled', 3_000);
    },
  } } });
  const again = await reread.r.reconcile('ns/p', 2);
  assert.deepEqual([again.kind, again.kind === 'retry' ? again.afterMs : null], ['retry', 3_000]);
});

test('reconcile: a Terminating pod of a live owner is freed when its node is fulfilled in the stored Workflow, read at the decision\'s lane', async () => {
  const terminating = pod({ completedLabel: 'false', deletionTimestamp: Date.now() - 1000, nodeId: 'wf-7' });
  const asked: Array<[string, number]> = [];
  const verdicts: Record<string, RecordVerdict> = {
    fulfilled: { kind: 'fulfilled', nodeId: 'wf-7', phase: 'Succeeded' },
    running: { kind: 'not-fulfilled', nodeId: 'wf-7', phase: 'Running', taskResultSynced: null },
    offloaded: { kind: 'offloaded' },
    later: { kind: 'later', afterMs: 1234 },
  };
  const outcomes: Record<string, unknown> = {};
  for (const [name, verdict] of Object.entries(verdicts)) {
    const h = harness({
      cached: terminating,
      over: {
        policy: { finalizer: OURS, forceAfterMs: null, nodeStatus: 'terminating' },
        records: {
          verdict: async (p, _observedAt, priority) => {
            asked.push([p.nodeId ?? '', priority]);
            return verdict;
          },
        },
      },
    });
    const out = await h.r.reconcile('ns/p', 0);
    outcomes[name] = { kind: out.kind, ...('why' in out ? { why: out.why } : {}), ...('evidence' in out ? { evidence: out.evidence } : {}), ...(out.kind === 'recheck' ? { afterMs: out.afterMs } : {}), writes: h.writes.length };
  }
  assert.deepEqual(outcomes, {
    fulfilled: { kind: 'removed', evidence: 'node-status', writes: 1 },
    running: { kind: 'kept', why: 'owner-alive-unrecorded', writes: 0 },
    offloaded: { kind: 'kept', why: 'owner-alive-offloaded', writes: 0 },
    later: { kind: 'recheck', afterMs: 1234, writes: 0 },
  });
  assert.deepEqual(new Set(asked.map(([id, priority]) => `${id}@${priority}`)), new Set(['wf-7@1']), 'the pod-deleting lane, not the key\'s orphan lane');
});
