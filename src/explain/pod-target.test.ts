import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePodTarget } from './pod-target.ts';

test('NAMESPACE/NAME is split at the first slash', () => {
  assert.deepEqual(parsePodTarget('argo/hello-x7k2p-main-1234'), { namespace: 'argo', name: 'hello-x7k2p-main-1234' });
});

test('anything else names what is wrong', () => {
  const cases: Array<[string, RegExp]> = [
    ['hello', /expected NAMESPACE\/NAME/],
    ['/hello', /namespace "": /],
    ['Argo/hello', /namespace "Argo": /],
    ['argo/', /pod name "": /],
    ['argo/a/b', /pod name "a\/b": /],
  ];
  for (const [target, problem] of cases) {
    const r = parsePodTarget(target);
    assert.ok('problem' in r, target);
    assert.match(r.problem, problem);
  }
});
