import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FoundInstall, Volume } from './find-installs.ts';
import { configSource, containerEnv, launchOf, settingsOf } from './install-settings.ts';

const MOUNTS = [{ name: 'finalizer-sweeper-config', mountPath: '/etc/finalizer-sweeper' }];
const VOLUMES: Volume[] = [{ name: 'finalizer-sweeper-config', configMap: { name: 'finalizer-sweeper-config' } }];

function install(o: Partial<FoundInstall['container']> = {}, volumes = VOLUMES): FoundInstall {
  return {
    namespace: 'argo', deployment: 'workflow-controller', flavour: 'sidecar', beside: ['workflow-controller'], volumes,
    container: { name: 'finalizer-sweeper', args: ['controller', '--config=/etc/finalizer-sweeper/finalizer-sweeper.yaml'], volumeMounts: MOUNTS, ...o },
  };
}

test('containerEnv resolves values and metadata.namespace, and names what it cannot resolve', () => {
  const got = containerEnv(install({
    env: [
      { name: 'FINALIZER_SWEEPER_LEADER_ELECTION_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'FINALIZER_SWEEPER_INSTANCE_ID', value: 'prod' },
      { name: 'FINALIZER_SWEEPER_POD_SELECTOR', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
      { name: 'OTHER', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ],
    envFrom: [{ configMapRef: { name: 'x' } }],
  }));
  assert.deepEqual(got.env, { FINALIZER_SWEEPER_LEADER_ELECTION_NAMESPACE: 'argo', FINALIZER_SWEEPER_INSTANCE_ID: 'prod' });
  assert.equal(got.unresolved.length, 2);
  assert.match(got.unresolved[0] ?? '', /FINALIZER_SWEEPER_POD_SELECTOR/);
  assert.match(got.unresolved[1] ?? '', /envFrom/);
});

test('configSource finds the ConfigMap key mounted at the path', () => {
  const cases: [string, FoundInstall, string, object][] = [
    ['the key named as the file', install(), '/etc/finalizer-sweeper/finalizer-sweeper.yaml', { configMap: 'finalizer-sweeper-config', key: 'finalizer-sweeper.yaml' }],
    ['a key mapped by items', install({}, [{ name: 'finalizer-sweeper-config', configMap: { name: 'cm', items: [{ key: 'settings', path: 'finalizer-sweeper.yaml' }] } }]),
      '/etc/finalizer-sweeper/finalizer-sweeper.yaml', { configMap: 'cm', key: 'settings' }],
    ['a path in no mount', install(), '/config/x.yaml', { problem: /no volume mounted/ }],
    ['a volume that is no ConfigMap', install({}, [{ name: 'finalizer-sweeper-config' }]), '/etc/finalizer-sweeper/a.yaml', { problem: /not a ConfigMap/ }],
    ['items that map nothing to the file', install({}, [{ name: 'finalizer-sweeper-config', configMap: { name: 'cm', items: [] } }]), '/etc/finalizer-sweeper/a.yaml', { problem: /maps no key/ }],
  ];
  for (const [name, i, path, want] of cases) {
    const got = configSource(i, path);
    if ('problem' in want) {
      assert.ok('problem' in got, name);
      assert.match(got.problem, want.problem as RegExp, name);
    } else {
      assert.deepEqual(got, { path, ...want }, name);
    }
  }
});

test('settingsOf: flags beat the environment, which beats the config file, as at the controller\'s start', () => {
  const cases: [string, FoundInstall, string | null, { instanceId: string | null; namespaces: string[] }][] = [
    ['defaults', install(), '{}', { instanceId: null, namespaces: [] }],
    ['the file', install(), 'instanceId: prod\n', { instanceId: 'prod', namespaces: [] }],
    ['the file unread', install(), null, { instanceId: null, namespaces: [] }],
    ['env over the file', install({ env: [{ name: 'FINALIZER_SWEEPER_INSTANCE_ID', value: 'env' }] }), 'instanceId: prod\n', { instanceId: 'env', namespaces: [] }],
    ['a flag over env', install({ args: ['controller', '--config=/etc/finalizer-sweeper/finalizer-sweeper.yaml', '--instance-id=flag'], env: [{ name: 'FINALIZER_SWEEPER_INSTANCE_ID', value: 'env' }] }), '{}', { instanceId: 'flag', namespaces: [] }],
    ['the namespaced route', install({ env: [{ name: 'FINALIZER_SWEEPER_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }] }), '{}', { instanceId: null, namespaces: ['argo'] }],
  ];
  for (const [name, i, text, want] of cases) {
    const launch = launchOf(i);
    assert.ok(!('problem' in launch), name);
    const s = settingsOf(launch, text);
    assert.ok(!('problem' in s), `${name}: ${JSON.stringify(s)}`);
    assert.deepEqual({ instanceId: s.instanceId, namespaces: s.namespaces }, want, name);
  }
});

test('launchOf and settingsOf say what is wrong instead of throwing', () => {
  const badFlag = launchOf(install({ args: ['controller', '--bogus-flag'] }));
  assert.ok('problem' in badFlag);
  assert.match(badFlag.problem, /args do not parse.*bogus-flag/);
  const launch = launchOf(install());
  assert.ok(!('problem' in launch));
  const badFile = settingsOf(launch, 'podCleanupWorkrs: 3\n');
  assert.ok('problem' in badFile);
  assert.match(badFile.problem, /podCleanupWorkrs/);
});
