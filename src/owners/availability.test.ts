import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OwnerAvailability, type Path } from './availability.ts';
import { recordingLogger } from '../log.ts';
import { FakeClock } from '../queue/fake-clock.ts';

const OWNER = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };
const QUIET = 60_000;
const notFound = new Error('the server could not find the requested resource');

function availability() {
  const { logger, records } = recordingLogger();
  const changes: boolean[] = [];
  const clock = new FakeClock();
  const a = new OwnerAvailability({ owner: OWNER, logger, consequence: 'C', onChange: (served) => changes.push(served), clock, quietMs: QUIET });
  return { a, clock, changes, records };
}

type Step = { at: number } & ({ fails: Path } | { works: Path });

// Each case: what happened on which path, and when; then whether the resource counts as served.
const cases: { name: string; steps: Step[]; check: number; served: boolean }[] = [
  { name: 'the failing path works again', steps: [{ at: 0, fails: 'list' }, { at: 1_000, works: 'list' }], check: 1_000, served: true },
  { name: 'only the other path works, right after the 404', steps: [{ at: 0, fails: 'read' }, { at: 1_000, works: 'list' }], check: 1_000, served: false },
  { name: 'the failing path stays quiet for the interval, the other one fine', steps: [{ at: 0, fails: 'read' }], check: QUIET, served: true },
  { name: 'the failing path fails again before the interval', steps: [{ at: 0, fails: 'read' }, { at: 50_000, fails: 'read' }], check: QUIET, served: false },
  { name: 'both paths failing: quiet alone ends nothing', steps: [{ at: 0, fails: 'read' }, { at: 0, fails: 'list' }], check: 10 * QUIET, served: false },
  { name: 'both failing, one works again: the other still needs its quiet interval', steps: [{ at: 0, fails: 'read' }, { at: 0, fails: 'list' }, { at: 5_000, works: 'list' }], check: QUIET - 1, served: false },
  { name: 'both failing, one works again after the other went quiet', steps: [{ at: 0, fails: 'read' }, { at: 0, fails: 'list' }, { at: QUIET, works: 'list' }], check: QUIET, served: true },
  { name: 'a success on a path that never failed is no reason to clear a fresh 404', steps: [{ at: 0, fails: 'list' }, { at: 10, works: 'read' }], check: 10, served: false },
];

for (const { name, steps, check, served } of cases) {
  test(`outage hysteresis: ${name}`, () => {
    const { a, clock } = availability();
    for (const step of steps) {
      clock.advance(step.at - clock.now());
      if ('fails' in step) a.notServed(step.fails, notFound);
      else a.succeeded(step.works);
    }
    clock.advance(check - clock.now());
    assert.equal(a.served(), served);
  });
}

test('one line for the outage, one for its end, and one change each way, however many 404s', () => {
  const { a, changes, records } = availability();
  a.notServed('read', notFound);
  a.notServed('list', notFound);
  a.notServed('read', new Error('again'));
  a.succeeded('read');
  a.succeeded('list');
  assert.equal(a.served(), true);
  assert.deepEqual(changes, [false, true]);
  assert.deepEqual(records.map((r) => [r.level, r.msg.slice(0, 40)]), [
    ['error', 'owner resource workflows.argoproj.io/v1a'],
    ['info', 'recovered: the API server serves workflo'],
  ]);
  a.succeeded('list');
  assert.equal(records.length, 2, 'nothing more while served');
});

test('an outage seen by reads alone ends by itself once reads have been quiet: nothing has to read an owner again', () => {
  const { a, clock, changes } = availability();
  a.notServed('read', notFound);
  clock.advance(QUIET - 1);
  assert.deepEqual(changes, [false]);
  clock.advance(1);
  assert.deepEqual(changes, [false, true]);
  assert.equal(clock.pendingTimers(), 0);
});

test('a list/watch that keeps failing is never cleared by the quiet interval: each retry (at most 30 s apart) refreshes it', () => {
  const { a, clock } = availability();
  for (let t = 0; t <= 5 * QUIET; t += 30_000) {
    clock.advance(t - clock.now());
    a.notServed('list', notFound);
    assert.equal(a.served(), false, `at ${t} ms`);
  }
});
