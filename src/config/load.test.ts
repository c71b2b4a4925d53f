import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from './errors.ts';
import type { Command } from './keys.ts';
import { configPath, resolveSettings } from './load.ts';
import type { Settings } from './settings.ts';
import { DEFAULTS } from './settings.ts';

interface Layers {
  argv?: Record<string, unknown>;
  env?: Record<string, string | undefined>;
  file?: Record<string, unknown>;
  command?: Command;
}

function resolve(layers: Layers): Settings {
  return resolveSettings({
    argv: layers.argv ?? {},
    env: layers.env ?? {},
    command: layers.command ?? 'controller',
    file: layers.file === undefined ? null : { path: '/etc/fs.yaml', values: layers.file },
  });
}

function configError(layers: Layers): ConfigError {
  try {
    resolve(layers);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a ConfigError');
}

describe('precedence: flag > env > file > default', () => {
  const file = { podCleanupWorkers: 2 };
  const env = { FINALIZER_SWEEPER_POD_CLEANUP_WORKERS: '3' };
  const argv = { 'pod-cleanup-workers': '4' };
  const cases: [string, Layers, number][] = [
    ['the default when nothing is given', {}, DEFAULTS.podCleanupWorkers],
    ['the file over the default', { file }, 2],
    ['the environment over the file', { file, env }, 3],
    ['the flag over the environment and the file', { file, env, argv }, 4],
    ['the flag over the default', { argv }, 4],
  ];
  for (const [name, layers, workers] of cases) {
    test(`takes ${name}`, () => assert.equal(resolve(layers).podCleanupWorkers, workers));
  }

  test('a list in a higher layer replaces the lower one rather than merging', () => {
    const s = resolve({ file: { namespace: ['a', 'b'] }, env: { FINALIZER_SWEEPER_NAMESPACE: 'c' } });
    assert.deepEqual(s.namespaces, ['c']);
  });

  test('--leader-elect=false beats an environment that says true', () => {
    const s = resolve({ argv: { 'leader-elect': false }, env: { FINALIZER_SWEEPER_LEADER_ELECT: 'true' } });
    assert.equal(s.leaderElect, false);
  });

  test('an empty environment variable counts as unset', () => {
    const s = resolve({ file: { podSelector: 'app=x' }, env: { FINALIZER_SWEEPER_POD_SELECTOR: '' } });
    assert.equal(s.podSelector, 'app=x');
  });

  test('other FINALIZER_SWEEPER_ variables, such as Kubernetes service links, are ignored', () => {
    const s = resolve({ env: { FINALIZER_SWEEPER_SERVICE_HOST: '10.0.0.1', FINALIZER_SWEEPER_PORT: 'tcp://x:80' } });
    assert.deepEqual(s, DEFAULTS);
  });

  test('flags that the command does not take are ignored', () => {
    const s = resolve({ argv: { reason: 'stale' }, command: 'controller' });
    assert.deepEqual(s.reasons, []);
  });
});

describe('reading values', () => {
  test('namespaces come from repeated flags, each possibly comma-separated, deduplicated', () => {
    const s = resolve({ argv: { namespace: ['a', 'b,c', 'a'] } });
    assert.deepEqual(s.namespaces, ['a', 'b', 'c']);
  });

  test('namespaces come from a comma-separated environment variable', () => {
    assert.deepEqual(resolve({ env: { FINALIZER_SWEEPER_NAMESPACE: 'a, b' } }).namespaces, ['a', 'b']);
  });

  test('a repeated single-valued flag takes the last value', () => {
    assert.equal(resolve({ argv: { 'pod-cleanup-workers': ['2', '5'] } }).podCleanupWorkers, 5);
  });

  test('durations become milliseconds', () => {
    const s = resolve({ file: { resyncPeriod: '90s' }, argv: { 'shutdown-timeout': '1m30s' } });
    assert.equal(s.resyncPeriodMs, 90_000);
    assert.equal(s.shutdownTimeoutMs, 90_000);
  });

  for (const raw of ['0', '0s'] as const) {
    test(`--force-after ${raw} turns the stale reason off`, () => {
      assert.equal(resolve({ file: { forceAfter: '1h' }, argv: { 'force-after': raw } }).forceAfterMs, null);
    });
  }

  test('the owner is assembled from its four keys without touching DEFAULTS', () => {
    const s = resolve({ file: { ownerGroup: 'example.com', ownerKind: 'Job' }, argv: { 'owner-resource': 'jobs' } });
    assert.deepEqual(s.owner, { group: 'example.com', version: 'v1alpha1', resource: 'jobs', kind: 'Job' });
    assert.equal(DEFAULTS.owner.group, 'argoproj.io');
  });

  test('sweep reasons come from repeated and comma-separated flags', () => {
    const s = resolve({ command: 'sweep', argv: { reason: ['owner-gone', 'recorded,pod-deleting'] } });
    assert.deepEqual(s.reasons, ['owner-gone', 'recorded', 'pod-deleting']);
  });

  test('null in the file resets a nullable setting', () => {
    assert.equal(resolve({ file: { maxRemovals: null, kubeconfig: null } }).maxRemovals, null);
  });

  test('QPS and burst stay unset unless given, so that mode auto can tell', () => {
    const s = resolve({});
    assert.deepEqual([s.kubeApiBudgetMode, s.kubeApiQps, s.kubeApiBurst], ['auto', null, null]);
    assert.equal(resolve({ file: { kubeApiQps: null } }).kubeApiQps, null);
  });

  test('QPS and burst given in any layer are kept', () => {
    assert.equal(resolve({ file: { kubeApiQps: 50 } }).kubeApiQps, 50);
    assert.equal(resolve({ env: { FINALIZER_SWEEPER_KUBE_API_BURST: '7' } }).kubeApiBurst, 7);
    assert.equal(resolve({ argv: { 'kube-api-qps': '2.5' } }).kubeApiQps, 2.5);
  });
});

describe('mistakes are ConfigErrors naming the key, its source, the value and what is allowed', () => {
  const cases: [string, Layers, Partial<ConfigError>, RegExp][] = [
    ['a workers count of 0 from a flag', { argv: { 'pod-cleanup-workers': '0' } },
      { key: 'podCleanupWorkers', source: 'flag', value: '0' }, /--pod-cleanup-workers \(flag\): "0": out of range; allowed: an integer from 1 to 1000/],
    ['a workers count above 1000 from the environment', { env: { FINALIZER_SWEEPER_POD_CLEANUP_WORKERS: '1001' } },
      { key: 'podCleanupWorkers', source: 'env' }, /FINALIZER_SWEEPER_POD_CLEANUP_WORKERS \(env\): "1001": out of range/],
    ['a workers count that is not a number', { argv: { 'pod-cleanup-workers': 'many' } },
      { key: 'podCleanupWorkers' }, /"many": not a number/],
    ['a quoted number in the file', { file: { podCleanupWorkers: '8' } },
      { key: 'podCleanupWorkers', source: 'file' }, /podCleanupWorkers in \/etc\/fs.yaml \(file\): "8": wrong type: a string/],
    ['a QPS of 0', { argv: { 'kube-api-qps': '0' } }, { key: 'kubeApiQps' }, /allowed: a number > 0/],
    ['a fractional burst', { file: { kubeApiBurst: 1.5 } }, { key: 'kubeApiBurst' }, /not an integer/],
    ['a burst of 0', { argv: { 'kube-api-burst': '0' } }, { key: 'kubeApiBurst' }, /allowed: an integer >= 1/],
    ['an unknown budget mode', { argv: { 'kube-api-budget-mode': 'apf-only' } }, { key: 'kubeApiBudgetMode' }, /allowed: one of auto, qps, apf/],
    ['a page size above 10000', { file: { listPageSize: 10_001 } }, { key: 'listPageSize' }, /from 1 to 10000/],
    ['"yes" for a boolean in the file', { file: { leaderElect: 'yes' } }, { key: 'leaderElect' }, /wrong type: a string; allowed: true or false/],
    ['"1" for a boolean in the environment', { env: { FINALIZER_SWEEPER_DRY_RUN: '1' } }, { key: 'dryRun' }, /not a boolean/],
    ['a namespace as a number', { file: { namespace: 5 } }, { key: 'namespace' }, /wrong type: a number/],
    ['an invalid namespace name', { argv: { namespace: 'Team_A' } }, { key: 'namespace' }, /"Team_A": not a DNS-1123 label/],
    ['a duration without a unit', { env: { FINALIZER_SWEEPER_RESYNC_PERIOD: '300' } },
      { key: 'resyncPeriod' }, /bare number has no unit.*did you mean "300s"\?/],
    ['a number for a duration in the file', { file: { shutdownTimeout: 30 } }, { key: 'shutdownTimeout' }, /did you mean "30s"\?/],
    ['a zero resync period', { argv: { 'resync-period': '0s' } }, { key: 'resyncPeriod' }, /out of range; allowed: a duration > 0/],
    ['a bind address without a port', { argv: { 'metrics-bind-address': '8080' } }, { key: 'metricsBindAddress' }, /not host:port/],
    ['a port above 65535', { file: { healthProbeBindAddress: ':70000' } }, { key: 'healthProbeBindAddress' }, /port above 65535/],
    ['a broken label selector', { argv: { 'pod-selector': 'app in (a' } }, { key: 'podSelector' }, /cannot read requirement/],
    ['a finalizer without a domain prefix', { argv: { finalizer: 'status' } }, { key: 'finalizer' }, /no domain prefix/],
    ['an unknown log level', { env: { FINALIZER_SWEEPER_LOG_LEVEL: 'verbose' } }, { key: 'logLevel' }, /allowed: one of debug, info, warn, error/],
    ['an unknown reason', { command: 'sweep', argv: { reason: 'orphan' } }, { key: 'reason' }, /allowed: one of owner-gone, namespace-deleting, pod-deleting, recorded, stale/],
    ['maxRemovals of 0', { command: 'sweep', argv: { 'max-removals': '0' } }, { key: 'maxRemovals' }, /out of range/],
    ['an empty kubeconfig path from a flag', { argv: { kubeconfig: '' } }, { key: 'kubeconfig' }, /empty/],
    ['a confirm that is no digest', { command: 'sweep', argv: { 'owner-crd-deleted': true, confirm: 'wrongdigest' } }, { key: 'confirm' }, /"wrongdigest": not a digest; allowed: the 16 hexadecimal digits/],
    ['a confirm without ownerCrdDeleted', { command: 'sweep', argv: { confirm: '0123456789abcdef' } }, { key: 'confirm' }, /confirms a dry run of --owner-crd-deleted, which is not set/],
    ['a confirm beside a dry run', { command: 'sweep', argv: { 'owner-crd-deleted': true, confirm: '0123456789abcdef', 'dry-run': true } }, { key: 'confirm' }, /drop one/],
    ['ownerCrdDeleted beside a reason', { command: 'sweep', argv: { 'owner-crd-deleted': true, reason: 'owner-gone' } }, { key: 'ownerCrdDeleted' }, /drop --reason/],
    ['ownerCrdDeleted beside maxRemovals', { command: 'sweep', file: { maxRemovals: 10 }, argv: { 'owner-crd-deleted': true } }, { key: 'ownerCrdDeleted' }, /narrow with --namespace/],
    ['ownerCrdDeleted for the core group', { command: 'sweep', argv: { 'owner-crd-deleted': true, 'owner-group': '' } }, { key: 'ownerCrdDeleted' }, /the core API group has no CRD/],
  ];
  for (const [name, layers, fields, message] of cases) {
    test(`rejects ${name}`, () => {
      const err = configError(layers);
      for (const [field, value] of Object.entries(fields)) {
        assert.deepEqual(err[field as keyof ConfigError], value, field);
      }
      assert.match(err.message, message);
    });
  }
});

describe('unknown keys in the file', () => {
  const cases: [string, string][] = [
    ['podCleanupWorker', 'podCleanupWorkers'],
    ['pod-cleanup-workers', 'podCleanupWorkers'],
    ['namespaces', 'namespace'],
    ['resyncPeriodMs', 'resyncPeriod'],
    ['leaseDuration', 'leaderElectionLeaseDuration'],
    ['loglevel', 'logLevel'],
  ];
  for (const [written, meant] of cases) {
    test(`${written} is rejected with a suggestion of ${meant}`, () => {
      const err = configError({ file: { [written]: 1 } });
      assert.equal(err.key, written);
      assert.equal(err.source, 'file');
      assert.match(err.message, new RegExp(`unknown key.*did you mean ${meant}\\?`));
    });
  }

  test('a key far from every known key gets no suggestion', () => {
    assert.doesNotMatch(configError({ file: { frobnicate: true } }).message, /did you mean/);
  });

  test('a nested owner is rejected with the flat keys to use', () => {
    assert.match(configError({ file: { owner: { group: 'x' } } }).message, /ownerGroup, ownerVersion/);
  });

  test('config is rejected in the file', () => {
    assert.match(configError({ file: { config: '/other.yaml' } }).message, /cannot name another/);
  });
});

describe('combinations', () => {
  test('a renew deadline not shorter than the lease duration is rejected, blaming the key given', () => {
    const err = configError({ argv: { 'leader-election-renew-deadline': '15s' } });
    assert.equal(err.key, 'leaderElectionRenewDeadline');
    assert.match(err.message, /renew deadline 15s is not shorter than the lease duration 15s/);
  });

  test('a lease duration shortened below the default renew deadline is blamed on the lease duration', () => {
    const err = configError({ file: { leaderElectionLeaseDuration: '5s' } });
    assert.equal(err.key, 'leaderElectionLeaseDuration');
    assert.equal(err.source, 'file');
  });

  test('a retry period not shorter than the renew deadline is rejected', () => {
    const err = configError({ env: { FINALIZER_SWEEPER_LEADER_ELECTION_RETRY_PERIOD: '10s' } });
    assert.equal(err.key, 'leaderElectionRetryPeriod');
  });

  test('sweep --reason stale without --force-after is rejected', () => {
    const err = configError({ command: 'sweep', argv: { reason: 'stale' } });
    assert.equal(err.key, 'reason');
    assert.match(err.message, /needs forceAfter/);
  });

  test('mode apf beside a given QPS is rejected, blaming the one given in the higher layer', () => {
    const byFlag = configError({ file: { kubeApiQps: 50 }, argv: { 'kube-api-budget-mode': 'apf' } });
    assert.equal(byFlag.key, 'kubeApiBudgetMode');
    assert.match(byFlag.message, /mode apf sets no QPS cap, yet a QPS is given/);
    const byEnv = configError({ file: { kubeApiBudgetMode: 'apf' }, env: { FINALIZER_SWEEPER_KUBE_API_BURST: '10' } });
    assert.equal(byEnv.key, 'kubeApiBurst');
  });

  test('modes auto and qps take a given QPS', () => {
    for (const mode of ['auto', 'qps']) {
      assert.equal(resolve({ argv: { 'kube-api-budget-mode': mode, 'kube-api-qps': '5' } }).kubeApiQps, 5);
    }
  });

  test('sweep --reason stale with --force-after is accepted', () => {
    const s = resolve({ command: 'sweep', argv: { reason: 'stale', 'force-after': '24h' } });
    assert.equal(s.forceAfterMs, 86_400_000);
  });
});

describe('configPath', () => {
  test('--config beats FINALIZER_SWEEPER_CONFIG', () => {
    assert.deepEqual(configPath({ argv: { config: '/a.yaml' }, env: { FINALIZER_SWEEPER_CONFIG: '/b.yaml' } }),
      { path: '/a.yaml', source: 'flag' });
  });

  test('FINALIZER_SWEEPER_CONFIG names the file when --config is absent', () => {
    assert.deepEqual(configPath({ argv: {}, env: { FINALIZER_SWEEPER_CONFIG: '/b.yaml' } }), { path: '/b.yaml', source: 'env' });
  });

  test('no file is read when neither is given', () => {
    assert.equal(configPath({ argv: {}, env: {} }), null);
  });

  test('an empty --config is rejected', () => {
    assert.throws(() => configPath({ argv: { config: '' }, env: {} }), ConfigError);
  });
});
