// ConfigReload's verdicts on each new text of the config file, with the real settings loader:
// a text the controller could start with restarts it, any other keeps it running and says so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { settingsFromText } from '../config/load.ts';
import { ConfigReload } from './config-reload.ts';

const PATH = '/etc/finalizer-sweeper/finalizer-sweeper.yaml';
const RUNNING = 'podCleanupWorkers: 4\n';

/** reloadWith runs a ConfigReload over `texts`, with these flags on top, and records what it did. */
function reloadWith(texts: string[], argv: Record<string, unknown> = {}) {
  const did = { restarts: 0, reloads: [] as boolean[], errors: [] as Array<Record<string, unknown>>, infos: [] as string[] };
  const reload = new ConfigReload({
    config: { path: PATH, text: RUNNING, load: (text) => settingsFromText({ argv, env: {}, command: 'controller' }, PATH, text) },
    metrics: { configReload: (ok) => did.reloads.push(ok) },
    logger: { info: (_f, msg) => did.infos.push(msg), error: (fields) => did.errors.push(fields) },
    restart: () => did.restarts++,
  });
  for (const text of texts) reload.changed(text);
  return did;
}

test('a valid change restarts, once, and reports no failure', () => {
  const did = reloadWith(['podCleanupWorkers: 16\n', 'podCleanupWorkers: 32\n']);
  assert.equal(did.restarts, 1);
  assert.deepEqual(did.reloads, []);
  assert.deepEqual(did.errors, []);
});

test('invalid texts keep the running settings: each logged once with its key and reason, each counted', () => {
  for (const [what, text, key, reason] of [
    ['a wrong type', 'podCleanupWorkers: many\n', 'podCleanupWorkers', /podCleanupWorkers in .*"many"/],
    ['an unknown key', 'podCleanupWorkerz: 4\n', 'podCleanupWorkerz', /unknown key.*did you mean podCleanupWorkers/],
    ['malformed YAML', 'podCleanupWorkers: [1,\n', 'config', /malformed YAML at line/],
    ['two documents', 'dryRun: true\n---\ndryRun: false\n', 'config', /2 YAML documents/],
    ['values wrong together', 'leaderElectionRenewDeadline: 20s\nleaderElectionLeaseDuration: 15s\n', 'leaderElectionRenewDeadline', /not shorter than the lease duration/],
  ] as const) {
    const did = reloadWith([text]);
    assert.equal(did.restarts, 0, what);
    assert.deepEqual(did.reloads, [false], what);
    assert.equal(did.errors.length, 1, what);
    assert.equal(did.errors[0]?.['key'], key, what);
    assert.match(String(did.errors[0]?.['err']), reason, what);
    assert.equal(did.errors[0]?.['config'], PATH, what);
  }
});

test('flags apply on top of the new text, as at start: a file value the flags make contradictory is refused', () => {
  const did = reloadWith(['leaderElectionRenewDeadline: 20s\n'], { 'leader-election-lease-duration': '15s' });
  assert.equal(did.restarts, 0);
  assert.equal(did.errors[0]?.['key'], 'leaderElectionLeaseDuration');
});

test('a bad text, then the text it runs with again: no restart, and the failure clears', () => {
  const did = reloadWith(['podCleanupWorkers: many\n', RUNNING]);
  assert.equal(did.restarts, 0);
  assert.deepEqual(did.reloads, [false, true]);
  assert.equal(did.errors.length, 1);
  assert.deepEqual(did.infos, ['the config file is back to the text the running settings were built from']);
});

test('a bad text, then a fixed one: the fixed one restarts', () => {
  const did = reloadWith(['podCleanupWorkers: many\n', 'podCleanupWorkerz: 4\n', 'podCleanupWorkers: 16\n']);
  assert.deepEqual(did.reloads, [false, false]);
  assert.equal(did.errors.length, 2, 'two distinct bad texts, each said once');
  assert.equal(did.restarts, 1);
});
