// docs/configuration.md against the flags as the CLI registers them (flags.ts, generated from
// KEYS): every flag has one row naming its environment variable, file key, command and the
// default --help shows, and the doc names no flag or variable that does not exist. The doc's
// meanings are prose and stay free; the five cells before them are checked here.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import yargs from 'yargs';
import { defineControllerOptions, defineExplainOptions, defineStatusOptions, defineSweepOptions } from './flags.ts';
import { isKnownVariable } from './environment.ts';
import { CONFIG_KEY, ENV_PREFIX, KEYS } from './keys.ts';

const DOC = new URL('../../docs/configuration.md', import.meta.url);

/**
 * Registered is the part of yargs' option table these checks read: the flags a command takes and
 * the default --help prints for each. yargs' typings leave getOptions() out.
 */
interface Registered {
  key: Record<string, unknown>;
  defaultDescription: Record<string, string | undefined>;
}

/** YARGS_OWN are the flags yargs adds itself. */
const YARGS_OWN = new Set(['help', 'version']);

/**
 * NOT_SETTINGS are names the doc may mention that are not ours: Argo's own flag, and the misspelt
 * variable the doc shows refused. The variables the CLI lets pass without being settings
 * (service links, the test tools') are environment.ts's isKnownVariable.
 */
const NOT_SETTINGS = new Set(['--instanceid', `${ENV_PREFIX}DRYRUN`]);

function registered(define: (y: ReturnType<typeof yargs>) => unknown): Registered {
  const y = yargs([]);
  define(y);
  return (y as unknown as { getOptions(): Registered }).getOptions();
}

/** expectedRows: the first five cells of each flag's row, keyed by flag, in --help's order. */
function expectedRows(): Map<string, string[]> {
  const commands = [
    ['controller', registered((y) => defineControllerOptions(y))],
    ['sweep', registered((y) => defineSweepOptions(y))],
    ['explain', registered((y) => defineExplainOptions(y))],
    ['status', registered((y) => defineStatusOptions(y))],
  ] as const;
  const rows = new Map<string, string[]>();
  for (const [, options] of commands) {
    for (const flag of Object.keys(options.key).filter((f) => !YARGS_OWN.has(f))) {
      if (rows.has(flag)) continue;
      const spec = KEYS.find((k) => k.flag === flag);
      assert.ok(spec !== undefined || flag === CONFIG_KEY.flag, `--${flag} is registered but is not in KEYS`);
      const takenBy = commands.filter(([, o]) => flag in o.key).map(([c]) => c);
      rows.set(flag, [
        `--${flag}`,
        spec?.env ?? CONFIG_KEY.env,
        spec?.key ?? '(none)',
        commandCell(takenBy),
        options.defaultDescription[flag] ?? '(none)',
      ]);
    }
  }
  return rows;
}

/** commandCell is the doc's "command" cell: `all` (controller, sweep and explain; `all, status` with status), `both` (controller and sweep), else the commands by name. */
function commandCell(takenBy: readonly string[]): string {
  if (['controller', 'sweep', 'explain'].every((c) => takenBy.includes(c))) return takenBy.includes('status') ? 'all, status' : 'all';
  if (takenBy.length === 2 && takenBy.includes('controller') && takenBy.includes('sweep')) return 'both';
  return takenBy.join(', ');
}

/** documentedRows: the first five cells of every reference row in the doc (a row starts with a flag), backticks dropped. */
function documentedRows(doc: string): string[][] {
  return doc.split('\n')
    .filter((line) => /^\|\s*`--/.test(line))
    .map((line) => line.split('|').slice(1, 6).map((cell) => cell.trim().replaceAll('`', '')));
}

/** asRow renders expected cells as a row to paste: names in backticks, the meaning to write. */
const asRow = (cells: readonly string[]): string => `| ${cells.map((c, i) => (i < 3 && c !== '(none)' ? `\`${c}\`` : c)).join(' | ')} | MEANING |`;

describe('docs/configuration.md', () => {
  test('has one row per flag, with its variable, file key, command and default', async () => {
    const expected = expectedRows();
    const rows = documentedRows(await readFile(DOC, 'utf8'));
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const cells of rows) {
      const flag = (cells[0] ?? '').replace(/^--/, '');
      const want = expected.get(flag);
      if (want === undefined) problems.push(`a row for --${flag}, which no command takes`);
      else if (seen.has(flag)) problems.push(`a second row for --${flag}`);
      else if (JSON.stringify(cells) !== JSON.stringify(want)) problems.push(`--${flag}: [${cells.join(' | ')}], expected [${want.join(' | ')}]`);
      seen.add(flag);
    }
    const missing = [...expected.entries()].filter(([flag]) => !seen.has(flag));
    for (const [flag, want] of missing) problems.push(`no row for --${flag}; add: ${asRow(want)}`);
    assert.deepEqual(problems, [], `docs/configuration.md is out of step with src/config/keys.ts:\n${problems.join('\n')}`);
  });

  test('names no flag or environment variable that does not exist', async () => {
    const doc = await readFile(DOC, 'utf8');
    const expected = expectedRows();
    const booleans = new Set(KEYS.filter((k) => k.boolean).map((k) => k.flag));
    const knownEnv = new Set([CONFIG_KEY.env, ...KEYS.map((k) => k.env)]);
    const flags = [...doc.matchAll(/(?<![\w-])--([a-z][a-z0-9-]*)/g)].map((m) => m[1] ?? '');
    const unknownFlags = flags.filter((f) => !expected.has(f) && !YARGS_OWN.has(f) && !NOT_SETTINGS.has(`--${f}`)
      && !(f.startsWith('no-') && booleans.has(f.slice(3))));
    const unknownEnv = [...doc.matchAll(new RegExp(`${ENV_PREFIX}[A-Z0-9_]*[A-Z0-9]`, 'g'))].map((m) => m[0])
      .filter((name) => !knownEnv.has(name) && !NOT_SETTINGS.has(name) && !isKnownVariable(name));
    assert.deepEqual([...new Set([...unknownFlags.map((f) => `--${f}`), ...unknownEnv])], []);
  });
});
