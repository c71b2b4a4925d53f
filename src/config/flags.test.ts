import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import yargs from 'yargs';
import { defineControllerOptions, defineSweepOptions } from './flags.ts';
import type { Command } from './keys.ts';
import { resolveSettings } from './load.ts';
import type { Settings } from './settings.ts';

/** parse mirrors how src/cli.ts is expected to use the definitions: strict, no yargs env. */
function parse(args: string[]): { command: Command; argv: Record<string, unknown> } {
  let parsed: { command: Command; argv: Record<string, unknown> } | undefined;
  yargs()
    .strict()
    .exitProcess(false)
    .fail((msg, err) => {
      throw err ?? new Error(msg);
    })
    .command('controller', 'run', (y) => defineControllerOptions(y), (argv) => {
      parsed = { command: 'controller', argv };
    })
    .command('sweep', 'sweep once', (y) => defineSweepOptions(y), (argv) => {
      parsed = { command: 'sweep', argv };
    })
    .parseSync(args);
  assert.ok(parsed !== undefined, 'no command ran');
  return parsed;
}

function settingsFrom(args: string[], env: Record<string, string> = {}): Settings {
  const { command, argv } = parse(args);
  return resolveSettings({ argv, env, command, file: null });
}

describe('flag definitions', () => {
  test('absent flags stay absent, so the environment is not masked by yargs defaults', () => {
    const s = settingsFrom(['controller'], {
      FINALIZER_SWEEPER_POD_CLEANUP_WORKERS: '3',
      FINALIZER_SWEEPER_LEADER_ELECT: 'false',
      FINALIZER_SWEEPER_DRY_RUN: 'true',
    });
    assert.equal(s.podCleanupWorkers, 3);
    assert.equal(s.leaderElect, false);
    assert.equal(s.dryRun, true);
  });

  for (const args of [['--leader-elect=false'], ['--leader-elect', 'false'], ['--no-leader-elect']]) {
    test(`${args.join(' ')} turns leader election off`, () => {
      assert.equal(settingsFrom(['controller', ...args]).leaderElect, false);
    });
  }

  test('--namespace repeats and splits on commas', () => {
    assert.deepEqual(settingsFrom(['controller', '--namespace', 'a', '--namespace=b,c']).namespaces, ['a', 'b', 'c']);
  });

  test('numbers keep their text until loadSettings reads them', () => {
    assert.equal(parse(['controller', '--pod-cleanup-workers', '08']).argv['pod-cleanup-workers'], '08');
  });

  test('sweep takes its own flags', () => {
    const s = settingsFrom(['sweep', '--reason', 'owner-gone', '--max-removals', '10', '--output', 'json']);
    assert.deepEqual([s.reasons, s.maxRemovals, s.output], [['owner-gone'], 10, 'json']);
  });

  const rejected: [string, string[], RegExp][] = [
    ['an unknown flag', ['controller', '--pod-workers', '3'], /Unknown argument/],
    ['a sweep-only flag on the controller', ['controller', '--reason', 'stale'], /Unknown argument/],
    ['a controller-only flag on the sweep', ['sweep', '--leader-elect'], /Unknown argument/],
    ['a flag without its value', ['controller', '--namespace'], /Not enough arguments/],
  ];
  for (const [name, args, message] of rejected) {
    test(`rejects ${name}`, () => assert.throws(() => parse(args), message));
  }
});
