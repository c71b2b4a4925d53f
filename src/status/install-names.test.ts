import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bindingNameOf, collisionOf, metricsServicesOf } from './install-names.ts';

test('an install\'s ClusterRoleBinding and metrics Service carry its Deployment\'s prefix', () => {
  const cases: [string, string | null, string[]][] = [
    ['finalizer-sweeper', 'finalizer-sweeper', ['finalizer-sweeper-metrics']],
    ['platform-finalizer-sweeper', 'platform-finalizer-sweeper', ['platform-finalizer-sweeper-metrics', 'finalizer-sweeper-metrics']],
    ['workflow-controller', 'finalizer-sweeper', ['finalizer-sweeper-metrics']],
    ['argo-workflows-workflow-controller', 'argo-workflows-finalizer-sweeper', ['argo-workflows-finalizer-sweeper-metrics', 'finalizer-sweeper-metrics']],
    ['my-sweeper', null, ['finalizer-sweeper-metrics']],
  ];
  for (const [deployment, binding, services] of cases) {
    assert.equal(bindingNameOf(deployment), binding, deployment);
    assert.deepEqual(metricsServicesOf(deployment), services, deployment);
  }
});

test('a binding that binds another install\'s account, and not this one\'s, is named with both and the way out', () => {
  const binding = { metadata: { name: 'finalizer-sweeper' }, subjects: [{ kind: 'ServiceAccount', name: 'finalizer-sweeper', namespace: 'platform-sweeper' }] };

  assert.equal(collisionOf(binding, { namespace: 'platform-sweeper', name: 'finalizer-sweeper' }), null);
  assert.match(collisionOf(binding, { namespace: 'finalizer-sweeper', name: 'finalizer-sweeper' }) ?? '', /^ClusterRoleBinding finalizer-sweeper binds platform-sweeper\/finalizer-sweeper, not this install's account finalizer-sweeper\/finalizer-sweeper: .*namePrefix/);
  assert.equal(collisionOf({ metadata: { name: 'finalizer-sweeper' }, subjects: [{ kind: 'Group', name: 'ops' }] }, { namespace: 'a', name: 'b' }), null, 'a binding made by hand for people');
});
