import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { describeSettings } from './describe.ts';
import { KEYS } from './keys.ts';
import { resolveSettings } from './load.ts';
import { DEFAULTS } from './settings.ts';

describe('describeSettings', () => {
  test('renders the defaults as flat strings keyed by config-file key', () => {
    const d = describeSettings(DEFAULTS);
    assert.equal(d.podCleanupWorkers, '8');
    assert.equal(d.resyncPeriod, '5m0s');
    assert.equal(d.forceAfter, '');
    assert.equal(d.namespace, '');
    assert.equal(d.kubeconfig, '');
    assert.equal(d.leaderElect, 'true');
    assert.deepEqual(Object.keys(d), KEYS.map((k) => k.key));
  });

  test('what it prints reads back through the environment to the same settings', () => {
    const custom = resolveSettings({
      command: 'sweep',
      file: null,
      env: {},
      argv: {
        kubeconfig: '/k', namespace: 'a,b', 'force-after': '36h', 'kube-api-qps': '2.5', 'dry-run': true,
        reason: 'stale,owner-gone', 'max-removals': '7', 'owner-group': '',
      },
    });
    const env = Object.fromEntries(
      KEYS.map((k) => [k.env, describeSettings(custom)[k.key]]).filter(([, v]) => v !== ''),
    ) as Record<string, string>;
    const back = resolveSettings({ command: 'sweep', file: null, argv: { 'owner-group': '' }, env });
    assert.deepEqual(back, custom);
  });
});
