// A Lease failure that lasts is logged once without a stack, again every REMIND_MS, its retries at
// debug, and its end once. The elector's use of it, on a fake clock, is in lease-elector.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../kube/errors.ts';
import { FakeClock } from '../queue/fake-clock.ts';
import { FailureLog, REMIND_MS } from './failure-log.ts';
import type { LeaderLogger } from './lease-elector.ts';

/** recorder keeps every line as [level, message, fields]. */
function recorder(): LeaderLogger & { lines: Array<[string, string, Record<string, unknown>]> } {
  const lines: Array<[string, string, Record<string, unknown>]> = [];
  const at = (level: string) => (fields: object, message: string) => void lines.push([level, message, fields as Record<string, unknown>]);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const FORBIDDEN = new ApiError(403, 'Forbidden', 'leases.coordination.k8s.io "l" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "leases"');
const MESSAGES = { failing: 'could not read the lease; retrying', recovered: 'the lease works again' };

test('a 403 every 3 s for 12 minutes: one warning, then one every 5 minutes, its retries at debug, no stack; its end once', () => {
  const clock = new FakeClock(0);
  const log = recorder();
  const failures = new FailureLog(log, clock, MESSAGES);
  for (let t = 0; t < 12 * 60_000; t += 3_000) {
    failures.failed({ lease: 'ns/l' }, FORBIDDEN);
    clock.advance(3_000);
  }
  failures.succeeded({ lease: 'ns/l' });
  failures.succeeded({ lease: 'ns/l' });

  const warnings = log.lines.filter(([level]) => level === 'warn');
  assert.deepEqual(warnings.map(([, message, f]) => [message, f['failures']]), [
    [MESSAGES.failing, 1],
    [`${MESSAGES.failing} (still failing; said again every 5 minutes while it lasts)`, REMIND_MS / 3_000 + 1],
    [`${MESSAGES.failing} (still failing; said again every 5 minutes while it lasts)`, 2 * REMIND_MS / 3_000 + 1],
  ]);
  assert.deepEqual(warnings[0]?.[2], { lease: 'ns/l', err: FORBIDDEN.message, status: 403, failures: 1 }, 'the message and status, no Error object (whose stack pino would print)');
  assert.equal(log.lines.filter(([level]) => level === 'debug').length, 240 - 3);
  assert.deepEqual(log.lines.filter(([level]) => level === 'info').map(([, m, f]) => [m, f['was'], f['failures']]), [[MESSAGES.recovered, 'HTTP 403', 240]]);
});

test('a failure of another kind is warned about at once; a success with nothing failing says nothing', () => {
  const clock = new FakeClock(0);
  const log = recorder();
  const failures = new FailureLog(log, clock, MESSAGES);
  failures.succeeded({});
  failures.failed({}, FORBIDDEN);
  failures.failed({}, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }));
  failures.failed({}, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }));
  assert.deepEqual(log.lines.map(([level, , f]) => [level, f['err']]), [
    ['warn', FORBIDDEN.message],
    ['warn', 'connect ECONNREFUSED 127.0.0.1:6443'],
    ['debug', 'connect ECONNREFUSED 127.0.0.1:6443'],
  ]);
});
