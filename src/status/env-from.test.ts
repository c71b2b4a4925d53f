import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../kube/errors.ts';
import { forbidden, scriptedClient } from '../kube/scripted-client.ts';
import { launchWithEnvFrom } from './env-from.ts';
import type { FoundInstall } from './find-installs.ts';
import { settingsOf } from './install-settings.ts';

const notFound = (): ApiError => ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'configmaps "x" not found' }, 404);

function install(envFrom: unknown[]): FoundInstall {
  return {
    namespace: 'argo', deployment: 'workflow-controller', flavour: 'sidecar', beside: ['workflow-controller'], volumes: [],
    container: {
      name: 'finalizer-sweeper', args: ['controller'], envFrom,
      env: [{ name: 'FINALIZER_SWEEPER_LEADER_ELECTION_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
    },
  };
}

const SETTINGS_REF = { prefix: 'FINALIZER_SWEEPER_', configMapRef: { name: 'finalizer-sweeper-settings', optional: true } };
const PATH = 'GET /api/v1/namespaces/argo/configmaps/finalizer-sweeper-settings';

test('the settings ConfigMap\'s keys, under the prefix, reach the settings status shows, beneath the container\'s own env', async () => {
  const { client } = scriptedClient({ [PATH]: () => ({ data: { INSTANCE_ID: 'platform-east', LEADER_ELECTION_NAMESPACE: 'elsewhere' } }) });

  const launch = await launchWithEnvFrom(client, install([SETTINGS_REF]));

  assert.ok(!('problem' in launch), JSON.stringify(launch));
  assert.deepEqual(launch.unresolved, []);
  const settings = settingsOf(launch, null);
  assert.ok(!('problem' in settings));
  assert.equal(settings.instanceId, 'platform-east');
  assert.equal(settings.leaderElectionNamespace, 'argo');
});

test('a misspelt key of the settings ConfigMap is the settings\' problem, as the container exits on it, with the key meant', async () => {
  const { client } = scriptedClient({ [PATH]: () => ({ data: { DRYRUN: 'true' } }) });

  const launch = await launchWithEnvFrom(client, install([SETTINGS_REF]));

  assert.ok(!('problem' in launch));
  assert.deepEqual(settingsOf(launch, null), { problem: 'Unknown environment variable: FINALIZER_SWEEPER_DRYRUN; FINALIZER_SWEEPER_DRYRUN: did you mean FINALIZER_SWEEPER_DRY_RUN?' });
});

test('an optional ConfigMap that does not exist gives nothing; one that is not optional is the reason the pod cannot start', async () => {
  const { client } = scriptedClient({ [PATH]: notFound });

  const optional = await launchWithEnvFrom(client, install([SETTINGS_REF]));
  const required = await launchWithEnvFrom(client, install([{ ...SETTINGS_REF, configMapRef: { name: 'finalizer-sweeper-settings' } }]));

  assert.ok(!('problem' in optional));
  assert.deepEqual(optional.unresolved, []);
  assert.deepEqual(required, { problem: 'ConfigMap argo/finalizer-sweeper-settings does not exist: the pod cannot take its environment from it' });
});

test('a refused read and a Secret are left out and said so', async () => {
  const { client } = scriptedClient({ [PATH]: () => forbidden('get', 'configmaps') });

  const launch = await launchWithEnvFrom(client, install([SETTINGS_REF, { secretRef: { name: 'tokens' } }]));

  assert.ok(!('problem' in launch));
  assert.equal(launch.unresolved.length, 2);
  assert.match(launch.unresolved[0] ?? '', /^the variables of ConfigMap argo\/finalizer-sweeper-settings \(envFrom\): .*get configmaps.*leave them out$/);
  assert.equal(launch.unresolved[1], 'the variables of Secret tokens (envFrom) are not read; the settings assume none of them');
});
