import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../kube/errors.ts';
import type { WatchEvent } from '../kube/watch-stream.ts';
import { FakeClock } from '../queue/fake-clock.ts';
import type { Lease, WatchableLeaseApi } from './lease.ts';
import { watchForRelease } from './release-watch.ts';

const leaseOf = (rv: string, holder: string): Lease => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l', namespace: 'ns', resourceVersion: rv }, spec: { holderIdentity: holder } });

/** scripted answers each watch opened with the next script: its events, then an end or a failure. */
function scripted(scripts: Array<{ events: Array<WatchEvent<Lease>>; fail?: Error }>): { api: WatchableLeaseApi; opened: Array<Record<string, unknown>> } {
  const opened: Array<Record<string, unknown>> = [];
  const api = {
    request: () => Promise.reject(new Error('not used')),
    watch: async function* (o: { query?: Record<string, unknown>; signal?: AbortSignal }) {
      opened.push(o.query ?? {});
      const script = scripts.shift();
      if (script === undefined) {
        await new Promise((_, reject) => o.signal?.addEventListener('abort', () => reject(o.signal?.reason), { once: true }));
        return;
      }
      for (const e of script.events) yield e;
      if (script.fail) throw script.fail;
    },
  } as unknown as WatchableLeaseApi;
  return { api, opened };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a release or a deletion wakes the candidate; a renewal does not', async () => {
  const { api, opened } = scripted([{ events: [{ type: 'MODIFIED', object: leaseOf('6', 'other') }, { type: 'MODIFIED', object: leaseOf('7', '') }, { type: 'DELETED', object: leaseOf('8', '') }] }]);
  const stop = new AbortController();
  let woken = 0;
  const done = watchForRelease({ api, lease: { namespace: 'ns', name: 'l' }, resourceVersion: '5', onRelease: () => woken++, retryMs: 1_000, clock: new FakeClock(0), signal: stop.signal });
  await settle();
  assert.equal(woken, 2);
  assert.equal(opened[0]?.['resourceVersion'], '5');
  assert.equal(opened[0]?.['fieldSelector'], 'metadata.name=l');
  stop.abort();
  await done;
});

test('a watch that fails or ends is opened again a retry period later, from now after a failure, never at once', async () => {
  const { api, opened } = scripted([{ events: [{ type: 'MODIFIED', object: leaseOf('6', 'other') }] }, { events: [], fail: new ApiError(410, 'Expired', 'too old') }]);
  const clock = new FakeClock(0);
  const stop = new AbortController();
  const done = watchForRelease({ api, lease: { namespace: 'ns', name: 'l' }, resourceVersion: '5', onRelease: () => {}, retryMs: 1_000, clock, signal: stop.signal });
  await settle();
  assert.equal(opened.length, 1, 'ended: not opened again at once');
  clock.advance(1_000);
  await settle();
  assert.equal(opened.length, 2);
  assert.equal(opened[1]?.['resourceVersion'], '6', 'after an end, from the last version seen');
  await settle();
  assert.equal(opened.length, 2, 'failed: not opened again at once');
  clock.advance(1_000);
  await settle();
  assert.equal(opened.length, 3);
  assert.equal(opened[2]?.['resourceVersion'], undefined, 'after a failure, from now');
  stop.abort();
  await done;
});

test('a watch refused (403: RBAC without the watch verb) is not asked for again', async () => {
  const { api, opened } = scripted([{ events: [], fail: new ApiError(403, 'Forbidden', 'leases "l" is forbidden') }]);
  const clock = new FakeClock(0);
  const stop = new AbortController();
  await watchForRelease({ api, lease: { namespace: 'ns', name: 'l' }, resourceVersion: '5', onRelease: () => {}, retryMs: 1_000, clock, signal: stop.signal });
  clock.advance(10_000);
  await settle();
  assert.equal(opened.length, 1);
});
