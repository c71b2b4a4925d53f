// The sweep summary's lines about pods of other instance IDs: what was left out, and the setting
// that would include it. Finding them on a real API server is in test/integration/sweep.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_INSTANCE } from '../controller/other-instances.ts';
import { otherInstanceLines } from './sweep-left-out.ts';

test('each instance ID left out gets one line: the pods, those waiting with the finalizer, a few names, and how to include them', () => {
  assert.deepEqual(otherInstanceLines([
    { instanceId: 'team-b', pods: 4, atLeast: false, waiting: 2, examples: ['argo/a', 'argo/b', 'argo/c'] },
    { instanceId: NO_INSTANCE, pods: 500, atLeast: true, waiting: 0, examples: ['ci/x'] },
  ]), [
    'left out by the selector: 4 workflow pods of instance ID team-b, 2 of them Terminating with the finalizer (argo/a, argo/b, argo/c, ...); to include them: --instance-id team-b (instanceId: team-b in the config file)',
    'left out by the selector: 500 or more workflow pods without an instance ID, none of them Terminating with the finalizer (ci/x, ...); to include them: run without --instance-id (no instanceId in the config file)',
  ]);
});

test('nothing left out says nothing; a look that failed says so', () => {
  assert.deepEqual(otherInstanceLines([]), []);
  assert.deepEqual(otherInstanceLines(null), ['workflow pods of other instance IDs: not looked for (see the log)']);
});
