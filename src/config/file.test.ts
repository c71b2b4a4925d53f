import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from './errors.ts';
import { parseConfigText, readConfigFile } from './file.ts';
import { KEYS } from './keys.ts';
import { loadSettings, loadSettingsAndFile } from './load.ts';
import { DEFAULTS } from './settings.ts';

const DEFAULT_FILE = new URL('../../config/finalizer-sweeper.yaml', import.meta.url).pathname;

function parseError(text: string): ConfigError {
  try {
    parseConfigText(text, '/etc/fs.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a ConfigError');
}

describe('parseConfigText', () => {
  test('reads a mapping', () => {
    assert.deepEqual(parseConfigText('podCleanupWorkers: 4\nnamespace: [a, b]\n', 'x').values,
      { podCleanupWorkers: 4, namespace: ['a', 'b'] });
  });

  for (const text of ['', '# only comments\n']) {
    test(`reads ${JSON.stringify(text)} as no settings`, () => {
      assert.deepEqual(parseConfigText(text, 'x').values, {});
    });
  }

  test('reports malformed YAML with its line, column and text', () => {
    const err = parseError('podCleanupWorkers: 4\n  listPageSize: 10\n');
    assert.equal(err.source, 'file');
    assert.equal(err.value, '  listPageSize: 10');
    assert.match(err.message, /^\/etc\/fs.yaml \(file\): " {2}listPageSize: 10": malformed YAML at line 2, column \d+: bad indentation/);
  });

  test('reports a duplicated key as malformed', () => {
    assert.match(parseError('logLevel: info\nlogLevel: debug\n').message, /line 2.*duplicated mapping key/);
  });

  test('rejects a list at the top level', () => {
    assert.match(parseError('- podCleanupWorkers: 4\n').message, /not a mapping \(found a list\)/);
  });

  test('rejects a scalar at the top level', () => {
    assert.match(parseError('podCleanupWorkers=4\n').message, /not a mapping \(found string\)/);
  });

  test('rejects several documents', () => {
    assert.match(parseError('logLevel: info\n---\nlogLevel: debug\n').message, /2 YAML documents/);
  });
});

describe('readConfigFile', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fs-config-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('an unreadable file is a ConfigError naming the path and who gave it', async () => {
    const path = join(dir, 'missing.yaml');
    await assert.rejects(readConfigFile({ path, source: 'env' }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.source, 'env');
      assert.equal(err.value, path);
      assert.match(err.message, /FINALIZER_SWEEPER_CONFIG \(env\): .*cannot read the file \(ENOENT\)/);
      return true;
    });
  });

  test('loadSettings applies the file named by FINALIZER_SWEEPER_CONFIG under the flags', async () => {
    const path = join(dir, 'small.yaml');
    await writeFile(path, 'podCleanupWorkers: 16\nlogLevel: debug\n');
    const s = await loadSettings({
      argv: { 'log-level': 'warn' },
      env: { FINALIZER_SWEEPER_CONFIG: path },
      command: 'controller',
    });
    assert.equal(s.podCleanupWorkers, 16);
    assert.equal(s.logLevel, 'warn');
  });

  test('loadSettingsAndFile returns the text the settings were built from, for the controller to watch it change from', async () => {
    const path = join(dir, 'watched.yaml');
    const text = 'podCleanupWorkers: 6\n';
    await writeFile(path, text);
    const { settings, file } = await loadSettingsAndFile({ argv: { config: path }, env: {}, command: 'controller' });
    assert.equal(settings.podCleanupWorkers, 6);
    assert.deepEqual(file && { path: file.path, text: file.text }, { path, text });
    assert.equal((await loadSettingsAndFile({ argv: {}, env: {}, command: 'controller' })).file, null);
  });
});

describe('config/finalizer-sweeper.yaml', () => {
  for (const command of ['controller', 'sweep'] as const) {
    test(`loads cleanly for ${command} and changes nothing`, async () => {
      const s = await loadSettings({ argv: { config: DEFAULT_FILE }, env: {}, command });
      assert.deepEqual(s, DEFAULTS);
    });
  }

  test('sets every key', async () => {
    const { values } = parseConfigText(await readFile(DEFAULT_FILE, 'utf8'), DEFAULT_FILE);
    assert.deepEqual(Object.keys(values).sort(), KEYS.map((k) => k.key).sort());
  });
});
