import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { batched } from './batched.ts';

function into(): { writes: string[]; write(s: string): void } {
  const writes: string[] = [];
  return { writes, write: (s: string) => writes.push(s) };
}

describe('batched', () => {
  test('holds lines until they reach maxChars, then hands them on in one write, in order', () => {
    const out = into();
    const d = batched(out, { maxChars: 10, maxDelayMs: 60_000 });
    d.write('aaaa\n');
    d.write('bbb\n');
    assert.deepEqual(out.writes, []);
    d.write('cc\n');
    assert.deepEqual(out.writes, ['aaaa\nbbb\ncc\n']);
    d.writeNow();
  });

  test('hands a lone line on after maxDelayMs', (t: TestContext) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const out = into();
    const d = batched(out, { maxChars: 1_000, maxDelayMs: 100 });
    d.write('one\n');
    t.mock.timers.tick(99);
    assert.deepEqual(out.writes, []);
    t.mock.timers.tick(1);
    assert.deepEqual(out.writes, ['one\n']);
    d.write('two\n');
    t.mock.timers.tick(100);
    assert.deepEqual(out.writes, ['one\n', 'two\n']);
  });

  test('writeNow and flush write what waits, and nothing when nothing waits', async () => {
    const out = into();
    const d = batched(out, { maxChars: 1_000, maxDelayMs: 60_000 });
    d.writeNow();
    d.write('x\n');
    d.writeNow();
    d.write('y\n');
    await new Promise<void>((resolve, reject) => d.flush?.((err) => (err ? reject(err) : resolve())));
    assert.deepEqual(out.writes, ['x\n', 'y\n']);
  });
});
