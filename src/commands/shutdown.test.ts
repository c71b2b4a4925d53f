import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Shutdown } from './shutdown.ts';
import { silentLogger } from '../log.ts';

// SIGWINCH stands in for SIGTERM: ignored by default, and not the diagnostic-report signal (SIGUSR2).
const SIGNAL: NodeJS.Signals = 'SIGWINCH';

/** until polls for a condition: a signal is delivered asynchronously, later under load. */
async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 5_000) assert.fail('condition not met within 5 s');
    await sleep(5);
  }
}

test('Shutdown: the first signal stops new work at once and cancels in-flight work only after the timeout', async () => {
  const s = new Shutdown({ timeoutMs: 200, logger: silentLogger(), signals: [SIGNAL], exit: () => assert.fail('must not exit') });
  try {
    process.kill(process.pid, SIGNAL);
    await until(() => s.stop.aborted);
    assert.equal(s.received, SIGNAL);
    await until(() => s.abort.aborted);
  } finally {
    s.dispose();
  }
});

test('Shutdown: a second signal exits at once', async () => {
  const exits: number[] = [];
  const s = new Shutdown({ timeoutMs: 10_000, logger: silentLogger(), signals: [SIGNAL], exit: (code) => exits.push(code) });
  try {
    process.kill(process.pid, SIGNAL);
    await until(() => s.stop.aborted);
    assert.equal(s.abort.aborted, false, 'in-flight work is not cancelled before the timeout');
    process.kill(process.pid, SIGNAL);
    await until(() => exits.length > 0);
    assert.deepEqual(exits.length, 1);
  } finally {
    s.dispose();
  }
});

test('Shutdown: dispose removes the handlers, so a later signal is not taken', async () => {
  const before = process.listenerCount(SIGNAL);
  const s = new Shutdown({ timeoutMs: 10_000, logger: silentLogger(), signals: [SIGNAL] });
  assert.equal(process.listenerCount(SIGNAL), before + 1);
  s.dispose();
  assert.equal(process.listenerCount(SIGNAL), before);
});
