import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import test from 'node:test';
import { AbortFanout } from './abort-fanout.ts';

class FakeRequest extends EventEmitter {
  destroyedWith: Error | null = null;
  destroy(err?: Error): void {
    this.destroyedWith = err ?? null;
    this.emit('close');
  }
}

test('an abort destroys every open request of its signal, with its reason as the cause, and no other', () => {
  const fan = new AbortFanout();
  const [term, other] = [new AbortController(), new AbortController()];
  const [a, b, c, done] = [new FakeRequest(), new FakeRequest(), new FakeRequest(), new FakeRequest()];
  fan.add(term.signal, a);
  fan.add(term.signal, b);
  fan.add(other.signal, c);
  fan.add(term.signal, done);
  done.emit('close');
  assert.equal(fan.size(term.signal), 2, 'a closed request leaves the set');
  const reason = new Error('term lost');
  term.abort(reason);
  for (const r of [a, b]) {
    assert.equal(r.destroyedWith?.name, 'AbortError');
    assert.equal(r.destroyedWith?.cause, reason);
  }
  assert.equal(done.destroyedWith, null, 'a request already closed is not destroyed');
  assert.equal(c.destroyedWith, null, "another signal's request is untouched");
  assert.equal(fan.size(term.signal), 0);
  assert.equal(fan.size(other.signal), 1);
});

test('a request added on an aborted signal is destroyed at once', () => {
  const fan = new AbortFanout();
  const ac = new AbortController();
  fan.add(ac.signal, new FakeRequest());
  ac.abort(new Error('stop'));
  const late = new FakeRequest();
  fan.add(ac.signal, late);
  assert.equal(late.destroyedWith?.name, 'AbortError');
  assert.equal(fan.size(ac.signal), 0);
});

test("a signal keeps its listener only while it has requests open: a never-aborted AbortSignal.any is not held for good", () => {
  const fan = new AbortFanout();
  const term = new AbortController();
  // As a Lease renewal's: the term's signal and a timeout's, made anew each time, never aborted.
  const signal = AbortSignal.any([term.signal, new AbortController().signal]);
  const [a, b] = [new FakeRequest(), new FakeRequest()];
  fan.add(signal, a);
  fan.add(signal, b);
  assert.equal(EventEmitter.getEventListeners(signal, 'abort').length, 1, 'one listener for both');
  a.emit('close');
  assert.equal(EventEmitter.getEventListeners(signal, 'abort').length, 1, 'b is still open');
  b.emit('close');
  assert.equal(EventEmitter.getEventListeners(signal, 'abort').length, 0, 'none once the last closed');
  const c = new FakeRequest();
  fan.add(signal, c);
  term.abort(new Error('term lost'));
  assert.equal(c.destroyedWith?.name, 'AbortError', 'a request added after the set emptied is still cancelled');
});
