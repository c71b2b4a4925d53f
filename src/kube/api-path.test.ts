import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { resourceOfPath } from './api-path.ts';

const cases: [string, string][] = [
  ['/api/v1/namespaces/argo/pods', 'pods'],
  ['/api/v1/namespaces/argo/pods/wf-1-p0', 'pods'],
  ['/api/v1/namespaces/argo/pods/wf-1-p0/proxy/metrics', 'pods'],
  ['/api/v1/pods', 'pods'],
  ['/api/v1/namespaces/argo', 'namespaces'],
  ['/api/v1/namespaces', 'namespaces'],
  ['/api/v1/namespaces/argo/events', 'events'],
  ['/apis/argoproj.io/v1alpha1/namespaces/argo/workflows/wf-1', 'workflows'],
  ['/apis/argoproj.io/v1alpha1/workflows', 'workflows'],
  ['/apis/coordination.k8s.io/v1/namespaces/argo/leases/finalizer-sweeper', 'leases'],
  ['/apis/events.k8s.io/v1/namespaces/argo/events?limit=1', 'events'],
  ['/api', ''],
  ['/api/v1', ''],
  ['/apis', ''],
  ['/apis/argoproj.io', ''],
  ['/apis/argoproj.io/v1alpha1', ''],
  ['/version', ''],
];

for (const [path, resource] of cases) {
  test(`resourceOfPath(${path}) is "${resource}"`, () => assert.equal(resourceOfPath(path), resource));
}

/** The first implementation, split and filtered, kept here as the label values' reference. */
function bySplitting(path: string): string {
  const parts = path.split('?', 1)[0]!.split('/').filter((p) => p !== '');
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  if (rest[0] === 'namespaces' && rest.length >= 3) return rest[2]!;
  return rest[0] ?? '';
}

test('resourceOfPath labels any path as splitting it did: empty segments, queries, short and long paths', () => {
  const word = fc.constantFrom('', 'api', 'apis', 'v1', 'namespaces', 'pods', 'argo', 'a?b', 'x', 'apix', 'namespace', '?');
  const path = fc.array(word, { maxLength: 9 }).map((ws) => ws.join('/'));
  fc.assert(
    fc.property(fc.oneof(path, path.map((p) => `/${p}`), fc.string()), (p) => assert.equal(resourceOfPath(p), bySplitting(p), p)),
    { numRuns: 20_000 },
  );
});
