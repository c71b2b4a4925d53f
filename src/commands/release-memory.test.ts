import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { runInNewContext } from 'node:vm';
import { releaseMemory } from './release-memory.ts';

/** garbage makes an object that nothing references, watched through a WeakRef. */
function garbage(): WeakRef<object> {
  return new WeakRef({ payload: new Array(1000).fill('x') });
}

test('releaseMemory: collects unreachable objects in a process started without --expose-gc', async () => {
  assert.equal(typeof globalThis.gc, 'undefined', 'this test must run without --expose-gc');
  const ref = garbage();
  // A WeakRef's target lives at least until the end of the job that created or read it.
  await tick();
  const ms = releaseMemory();
  assert.equal(typeof ms, 'number');
  assert.equal(ref.deref(), undefined);
});

test('releaseMemory: leaves no gc function behind, in this context or in new ones', () => {
  releaseMemory();
  assert.equal(typeof globalThis.gc, 'undefined');
  assert.equal(runInNewContext('typeof gc'), 'undefined');
});
