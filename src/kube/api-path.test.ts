import assert from 'node:assert/strict';
import test from 'node:test';
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
