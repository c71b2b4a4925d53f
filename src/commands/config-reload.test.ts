// ConfigReload's verdicts on each new text of the config file, with the real settings loader:
// a text the controller could start with restarts it, any other keeps it running and says so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { settingsFromText } from '../config/load.ts';
import { ConfigReload } from './config-reload.ts';
import type { Settings } from '../config/settings.ts';

const PATH = '/etc/finalizer-sweeper/finalizer-sweeper.yaml';
const RUNNING = 'podCleanupWorkers: 4\n';

/** reloadWith runs a ConfigReload over `texts`, with these flags on top, and records what it did. */
async function reloadWith(texts: string[], argv: Record<string, unknown> = {}, vet?: (s: Settings) => Promise<Error | null>) {
  const did = { restarts: 0, reloads: [] as boolean[], errors: [] as Array<Record<string, unknown>>, infos: [] as string[] };
  const reload = new ConfigReload({
    config: { path: PATH, text: RUNNING, load: (text) => settingsFromText({ argv, env: {}, command: 'controller' }, PATH, text) },
    metrics: { configReload: (ok) => did.reloads.push(ok) },
    logger: { info: (_f, msg) => did.infos.push(msg), error: (fields) => did.errors.push(fields) },
    restart: () => did.restarts++,
    vet,
  });
  for (const text of texts) await reload.changed(text);
  return did;
}

test('a valid change restarts, once, and reports no failure', async () => {
  const did = await reloadWith(['podCleanupWorkers: 16\n', 'podCleanupWorkers: 32\n']);
  assert.equal(did.restarts, 1);
  assert.deepEqual(did.reloads, []);
  assert.deepEqual(did.errors, []);
});

test('invalid texts keep the running settings: each logged once with its key and reason, each counted', async () => {
  for (const [what, text, key, reason] of [
    ['a wrong type', 'podCleanupWorkers: many\n', 'podCleanupWorkers', /podCleanupWorkers in .*"many"/],
    ['an unknown key', 'podCleanupWorkerz: 4\n', 'podCleanupWorkerz', /unknown key.*did you mean podCleanupWorkers/],
    ['malformed YAML', 'podCleanupWorkers: [1,\n', 'config', /malformed YAML at line/],
    ['two documents', 'dryRun: true\n---\ndryRun: false\n', 'config', /2 YAML documents/],
    ['values wrong together', 'leaderElectionRenewDeadline: 20s\nleaderElectionLeaseDuration: 15s\n', 'leaderElectionRenewDeadline', /not shorter than the lease duration/],
  ] as const) {
    const did = await reloadWith([text]);
    assert.equal(did.restarts, 0, what);
    assert.deepEqual(did.reloads, [false], what);
    assert.equal(did.errors.length, 1, what);
    assert.equal(did.errors[0]?.['key'], key, what);
    assert.match(String(did.errors[0]?.['err']), reason, what);
    assert.equal(did.errors[0]?.['config'], PATH, what);
  }
});

test('flags apply on top of the new text, as at start: a file value the flags make contradictory is refused', async () => {
  const did = await reloadWith(['leaderElectionRenewDeadline: 20s\n'], { 'leader-election-lease-duration': '15s' });
  assert.equal(did.restarts, 0);
  assert.equal(did.errors[0]?.['key'], 'leaderElectionLeaseDuration');
});

test('a bad text, then the text it runs with again: no restart, and the failure clears', async () => {
  const did = await reloadWith(['podCleanupWorkers: many\n', RUNNING]);
  assert.equal(did.restarts, 0);
  assert.deepEqual(did.reloads, [false, true]);
  assert.equal(did.errors.length, 1);
  assert.deepEqual(did.infos, ['the config file is back to the text the running settings were built from']);
});

test('a bad text, then a fixed one: the fixed one restarts', async () => {
  const did = await reloadWith(['podCleanupWorkers: many\n', 'podCleanupWorkerz: 4\n', 'podCleanupWorkers: 16\n']);
  assert.deepEqual(did.reloads, [false, false]);
  assert.equal(did.errors.length, 2, 'two distinct bad texts, each said once');
  assert.equal(did.restarts, 1);
});

test('owner settings that the cluster refuses keep the running settings, said once with the reason; others restart', async () => {
  const refuse = async (s: Settings): Promise<Error | null> => (s.owner.resource === 'cronworkflows' ? new Error('argoproj.io/v1alpha1 serves cronworkflows as kind CronWorkflow, not Workflow') : null);
  const refused = await reloadWith(['ownerResource: cronworkflows\n'], {}, refuse);
  assert.equal(refused.restarts, 0);
  assert.deepEqual(refused.reloads, [false]);
  assert.match(String(refused.errors[0]?.['err']), /as kind CronWorkflow, not Workflow/);
  const fine = await reloadWith(['podCleanupWorkers: 16\n'], {}, refuse);
  assert.equal(fine.restarts, 1);
});

test('a verdict that arrives after a newer text is dropped: only the newest text decides', async () => {
  let release: () => void = () => undefined;
  const slow = new Promise<void>((r) => (release = r));
  const restarts: string[] = [];
  const reload = new ConfigReload({
    config: { path: PATH, text: RUNNING, load: (text) => settingsFromText({ argv: {}, env: {}, command: 'controller' }, PATH, text) },
    metrics: { configReload: () => undefined },
    logger: { info: () => undefined, error: () => undefined },
    restart: () => restarts.push('restart'),
    vet: async (s) => {
      if (s.podCleanupWorkers === 16) await slow;
      return s.podCleanupWorkers === 32 ? new Error('refused') : null;
    },
  });
  const first = reload.changed('podCleanupWorkers: 16\n');
  await reload.changed('podCleanupWorkers: 32\n');
  release();
  await first;
  assert.deepEqual(restarts, [], 'the older text, accepted late, must not restart on the newer, refused one');
});
