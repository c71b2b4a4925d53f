// Every runbook sets each shell variable before its commands use it. bash itself decides what a
// use is (not a single-quoted jsonpath's `$`, not a comment): each runbook's sh blocks run in
// order, after the part of docs/runbooks/README.md it sends the reader to first, under `set -u`,
// with every command stubbed out (PATH leads nowhere and command_not_found_handle succeeds) and
// bash restricted (-r: no output redirection, no cd, no command with a slash), so that nothing
// runs but assignments and expansions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

const RUNBOOKS = join(import.meta.dirname, '..', '..', 'docs', 'runbooks');
const PREAMBLE_LINK = 'README.md#find-your-install';
const END = '__runbook_end__';
/** BASH is found on this process's PATH: the scripts themselves run with a PATH that leads nowhere. */
const BASH = (process.env['PATH'] ?? '').split(delimiter).map((dir) => join(dir, 'bash')).find((p) => existsSync(p)) ?? 'bash';

/** shBlocks are a markdown text's ```sh blocks, in order, list-item indentation removed. */
function shBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^( *)```sh\n([\s\S]*?)^\1```$/gm)].map(([, indent = '', body = '']) =>
    body.split('\n').map((line) => line.slice(Math.min(indent.length, line.length - line.trimStart().length))).join('\n'),
  );
}

/** section is the text of a markdown section, from its heading to the next heading of its level or above. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `the section ${heading}`);
  const level = /^#+/.exec(heading)?.[0] ?? '#';
  const rest = markdown.slice(start + heading.length + 2);
  const next = rest.search(new RegExp(`^#{1,${level.length}} `, 'm'));
  return next < 0 ? rest : rest.slice(0, next);
}

/** unsetUses runs the blocks as described above and returns bash's complaints about unset variables. */
async function unsetUses(blocks: string[]): Promise<{ unset: string[]; finished: boolean; stderr: string }> {
  const script = ['set -u', 'command_not_found_handle() { return 0; }', ...blocks, `echo ${END}`].join('\n');
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(BASH, ['--norc', '--noprofile', '-r', '-s'], { env: { PATH: '/nonexistent' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', () => resolve({ stdout: out, stderr: err }));
    child.stdin.end(script);
  });
  const unset = [...stderr.matchAll(/(\S+): unbound variable/g)].map((m) => m[1] ?? '');
  return { unset, finished: stdout.includes(END), stderr };
}

test('the check finds a variable used before it is set, and only then', async () => {
  const cases: Array<[string, string[]]> = [
    ['kubectl -n "$NS" logs "$POD"', ['NS']],
    ['NS=argo\nkubectl -n "$NS" logs "$POD"', ['POD']],
    ['NS=argo POD=$(kubectl -n "$NS" get pods -o name)\nkubectl -n "$NS" logs "$POD" | grep x', []],
    ['kubectl get pods -o go-template=\'{{range $k, $v := .x}}{{$k}}{{end}}\'   # $NOT_A_USE', []],
    ['H=$(kubectl get lease); L=${H%_*}; echo "${L:-nobody}" "${UNSET:-default}"', []],
    ['kubectl get pods -o jsonpath="{.items[0].metadata.name}" > /tmp/out\necho "$AFTER_REDIRECT"', ['AFTER_REDIRECT']],
  ];
  for (const [script, want] of cases) assert.deepEqual((await unsetUses([script])).unset, want, script);
});

test('every runbook sets each variable before its commands use it: after "Find your install" for the alerts\' runbooks, in order for the README', async () => {
  const readme = await readFile(join(RUNBOOKS, 'README.md'), 'utf8');
  const preamble = shBlocks(section(readme, '## Find your install'));
  assert.ok(preamble.length > 0);
  const files = (await readdir(RUNBOOKS)).filter((f) => f.endsWith('.md')).sort();
  assert.ok(files.length > 10);
  let checked = 0;
  for (const file of files) {
    const text = await readFile(join(RUNBOOKS, file), 'utf8');
    const blocks = shBlocks(text);
    const first = file === 'README.md' ? [] : (assert.ok(text.includes(PREAMBLE_LINK), `${file} sends the reader to ${PREAMBLE_LINK} first`), preamble);
    const { unset, finished, stderr } = await unsetUses([...first, ...blocks]);
    assert.deepEqual(unset, [], `${file} uses these before setting them`);
    assert.ok(finished, `${file}: every block ran (bash said: ${stderr})`);
    checked += blocks.length;
  }
  assert.ok(checked > 20, `${checked} blocks checked`);
});
