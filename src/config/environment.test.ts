import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { isKnownVariable, unknownVariables } from './environment.ts';

test('the settings\' variables, the tools\' own, the test harness\'s and Kubernetes\' service links pass', () => {
  const env = {
    FINALIZER_SWEEPER_DRY_RUN: 'true',
    FINALIZER_SWEEPER_LEADER_ELECTION_NAMESPACE: 'argo',
    FINALIZER_SWEEPER_KUBE_VERSION: '1.31',
    FINALIZER_SWEEPER_CACHE_DIR: '/c',
    FINALIZER_SWEEPER_TEST_KUBECONFIG: '/k',
    FINALIZER_SWEEPER_METRICS_SERVICE_HOST: '10.0.0.1',
    FINALIZER_SWEEPER_METRICS_SERVICE_PORT: '8080',
    FINALIZER_SWEEPER_METRICS_SERVICE_PORT_METRICS: '8080',
    FINALIZER_SWEEPER_METRICS_PORT: 'tcp://10.0.0.1:8080',
    FINALIZER_SWEEPER_METRICS_PORT_8080_TCP: 'tcp://10.0.0.1:8080',
    FINALIZER_SWEEPER_METRICS_PORT_8080_TCP_PROTO: 'tcp',
    FINALIZER_SWEEPER_METRICS_PORT_8080_TCP_PORT: '8080',
    FINALIZER_SWEEPER_METRICS_PORT_8080_TCP_ADDR: '10.0.0.1',
    FINALIZER_SWEEPER_SERVICE_HOST: '10.0.0.2',
    PATH: '/bin',
  };

  assert.equal(unknownVariables(env), null);
});

test('a misspelt setting is refused as an unknown flag is, with the variable meant', () => {
  assert.equal(unknownVariables({ FINALIZER_SWEEPER_DRYRUN: 'true' }), 'Unknown environment variable: FINALIZER_SWEEPER_DRYRUN\nFINALIZER_SWEEPER_DRYRUN: did you mean FINALIZER_SWEEPER_DRY_RUN?');
});

test('several are named together, each with its suggestion, even when empty; one far from every setting gets none', () => {
  const message = unknownVariables({ FINALIZER_SWEEPER_instanceId: 'x', FINALIZER_SWEEPER_WORKERS: '', FINALIZER_SWEEPER_SOMETHING_ELSE_ENTIRELY: '1' });

  assert.equal(message, [
    'Unknown environment variables: FINALIZER_SWEEPER_SOMETHING_ELSE_ENTIRELY, FINALIZER_SWEEPER_WORKERS, FINALIZER_SWEEPER_instanceId',
    'FINALIZER_SWEEPER_instanceId: did you mean FINALIZER_SWEEPER_INSTANCE_ID?',
  ].join('\n'));
});

test('a settings ConfigMap key written with the prefix, doubled by envFrom\'s prefix, is pointed at the single one', () => {
  assert.match(unknownVariables({ FINALIZER_SWEEPER_FINALIZER_SWEEPER_INSTANCE_ID: 'a' }) ?? '', /did you mean FINALIZER_SWEEPER_INSTANCE_ID\?/);
});

test('every FINALIZER_SWEEPER_* variable the repository\'s code, manifests and scripts name is known, so that the CLI started beside them runs', () => {
  const repo = join(import.meta.dirname, '..', '..');
  // Docs, unit tests, the settings test and environment.ts's own comment name misspelt variables on purpose.
  const named = execFileSync('git', ['grep', '-ohE', 'FINALIZER_SWEEPER_[A-Za-z0-9_]*[A-Za-z0-9]', '--', ':!*.md', ':!src/**/*.test.ts', ':!src/config/environment.ts', ':!test/integration/settings.test.ts'], { cwd: repo, encoding: 'utf8' });
  const names = [...new Set(named.trim().split('\n'))];

  assert.ok(names.includes('FINALIZER_SWEEPER_LEADER_ELECTION_NAMESPACE') && names.includes('FINALIZER_SWEEPER_KUBE_VERSION'), named);
  assert.deepEqual(names.filter((n) => !isKnownVariable(n)), []);
});
