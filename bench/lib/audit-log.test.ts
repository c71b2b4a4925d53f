import { test } from 'node:test';
import assert from 'node:assert/strict';
import { handoverAfter, ownerReadsBetween, parseAudit, tallyPatches } from './audit-log.ts';

const at = (s: number) => new Date(Date.UTC(2026, 10, 28, 14, 0, s)).toISOString().replace('Z', '123Z');
const t = (s: number) => Date.parse(at(s));

function event(o: { verb: string; resource: string; name: string; code: number; s: number; ua?: string; holder?: string; namespace?: string }): string {
  return JSON.stringify({
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: o.holder === undefined ? 'Metadata' : 'Request',
    stage: 'ResponseComplete',
    verb: o.verb,
    userAgent: o.ua ?? 'finalizer-sweeper/0.1.0',
    objectRef: { resource: o.resource, namespace: o.namespace ?? 'ns', name: o.name },
    responseStatus: { metadata: {}, code: o.code },
    requestReceivedTimestamp: at(o.s),
    stageTimestamp: at(o.s),
    ...(o.holder === undefined ? {} : { requestObject: { spec: { holderIdentity: o.holder } } }),
  });
}

const lease = (s: number, holder: string, code = 200) => event({ verb: 'update', resource: 'leases', name: 'l', code, s, holder, ua: 'finalizer-sweeper/0.1.0 leader-election' });
const patch = (s: number, name: string, code = 200, ua?: string) => event({ verb: 'patch', resource: 'pods', name, code, s, ...(ua === undefined ? {} : { ua }) });

test('parseAudit keeps the audit events and skips the server\'s own lines and early stages', () => {
  const text = [
    'I1128 14:00:00.000000 1 server.go:1] starting',
    patch(1, 'a'),
    JSON.stringify({ kind: 'Event', apiVersion: 'audit.k8s.io/v1', stage: 'ResponseStarted', verb: 'watch' }),
    '{"not audit": true}',
    lease(2, 'x'),
  ].join('\n');
  const entries = parseAudit(text);
  assert.equal(entries.length, 2);
  assert.deepEqual(entries.map((e) => [e.resource, e.name, e.code, e.holder]), [['pods', 'a', 200, undefined], ['leases', 'l', 200, 'x']]);
  assert.equal(entries[0]!.receivedAt, t(1));
});

test('handoverAfter finds the release and the takeover after the stop, ignoring refused writes and the old holder\'s renewals', () => {
  const entries = parseAudit([lease(1, 'a'), lease(3, 'a'), lease(5, 'a'), lease(6, 'b', 409), lease(7, ''), lease(9, 'b'), lease(11, 'b')].join('\n'));
  assert.deepEqual(handoverAfter(entries, { namespace: 'ns', name: 'l' }, t(4)), { oldHolder: 'a', releasedAt: t(7), takenAt: t(9), newHolder: 'b' });
  // A crash: no release, the other replica takes it once the lease expired.
  const crash = parseAudit([lease(1, 'a'), lease(3, 'a'), lease(20, 'b')].join('\n'));
  assert.deepEqual(handoverAfter(crash, { namespace: 'ns', name: 'l' }, t(4)), { oldHolder: 'a', releasedAt: null, takenAt: t(20), newHolder: 'b' });
});

test('tallyPatches splits at the takeover and counts pods patched twice, freed twice and freed wrongly', () => {
  const entries = parseAudit(
    [
      patch(1, 'o1'),
      patch(2, 'o2', 409),
      patch(3, 'o3'),
      patch(10, 'o2'),
      patch(11, 'o4'),
      patch(12, 'live1'),
      patch(13, 'o3', 404),
      patch(14, 'o5', 200, 'bench-observer'),
    ].join('\n'),
  );
  const tally = tallyPatches(entries, { namespace: 'ns', userAgent: 'finalizer-sweeper/', orphans: new Set(['o1', 'o2', 'o3', 'o4', 'o5']), splitAt: t(10) });
  assert.deepEqual(tally.old, { requests: 3, freed: 2, conflicts: 1, notFound: 0, otherAnswers: 0, firstFreedAt: t(1), lastFreedAt: t(3) });
  assert.deepEqual(tally.new, { requests: 4, freed: 3, conflicts: 0, notFound: 1, otherAnswers: 0, firstFreedAt: t(10), lastFreedAt: t(12) });
  assert.equal(tally.podsRepeated, 2);
  assert.equal(tally.podsOnBothSides, 2);
  assert.equal(tally.podsFreedTwice, 0);
  assert.deepEqual(tally.freedNotOrphans, ['live1']);
  assert.equal(tally.freedOrphans, 4);
});

test('ownerReadsBetween counts the controller\'s Workflow reads in the window', () => {
  const entries = parseAudit(
    [
      event({ verb: 'get', resource: 'workflows', name: 'w', code: 404, s: 9 }),
      event({ verb: 'get', resource: 'workflows', name: 'w', code: 404, s: 10 }),
      event({ verb: 'list', resource: 'workflows', name: '', code: 200, s: 11 }),
      event({ verb: 'get', resource: 'workflows', name: 'w', code: 404, s: 11, ua: 'bench-observer' }),
      event({ verb: 'get', resource: 'workflows', name: 'w', code: 404, s: 12 }),
    ].join('\n'),
  );
  assert.equal(ownerReadsBetween(entries, { userAgent: 'finalizer-sweeper/', from: t(10), to: t(12) }), 2);
});
