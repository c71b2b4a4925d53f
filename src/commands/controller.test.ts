// leadWhenElected's wiring of a term to the leader's work, on an in-memory Lease and real time
// (short leases): what the leader is handed must end when its term does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS, type Settings } from '../config/settings.ts';
import { FakeLeaseApi } from '../leader/fake-lease-api.ts';
import { silentLogger } from '../log.ts';
import { leadWhenElected } from './controller.ts';

const SETTINGS: Settings = { ...DEFAULTS, leaseDurationMs: 400, renewDeadlineMs: 300, retryPeriodMs: 50, leaderElectionNamespace: 'ns', leaderElectionId: 'l' };

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), `timed out waiting for ${what}`);
}

test('a deposed leader\'s in-flight work is cancelled with its term, not only its new work stopped', async () => {
  const api = new FakeLeaseApi();
  const terms: Array<{ stop: AbortSignal; abort: AbortSignal }> = [];
  const controller = {
    lead: (stop: AbortSignal, abort: AbortSignal) => {
      terms.push({ stop, abort });
      return new Promise<void>((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
    },
  };
  const stop = new AbortController();
  const abort = new AbortController();
  const running = leadWhenElected(SETTINGS, controller, api, { setLeader: () => {} }, silentLogger(), { stop: stop.signal, abort: abort.signal });
  try {
    await until(() => terms.length === 1, 'the first term');
    assert.equal(terms[0]!.abort.aborted, false, 'in-flight work runs while the term lasts');

    api.write({ holderIdentity: 'someone-else', renewTime: new Date().toISOString() });
    await until(() => terms[0]!.stop.aborted, 'the term to end');
    assert.equal(terms[0]!.abort.aborted, true, 'in-flight work is cancelled with the term');
    assert.equal(abort.signal.aborted, false, 'no shutdown was asked for');
  } finally {
    stop.abort();
    await running;
  }
});
