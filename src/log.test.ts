import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import type { LogDestination } from './log.ts';
import { createLogger, recordingLogger } from './log.ts';
import { duplicateKeys } from '../test/support/strict-json.ts';

function capture(): LogDestination & { lines: string[] } {
  const lines: string[] = [];
  return { lines, write: (line: string) => lines.push(line) };
}

describe('createLogger, json format', () => {
  test('writes one JSON object per line with an ISO time, the level name, the message and the fields', () => {
    const out = capture();
    createLogger({ logLevel: 'info', logFormat: 'json' }, out).info({ pod: 'argo/wf-1' }, 'removed finalizer');
    assert.equal(out.lines.length, 1);
    const entry = JSON.parse(out.lines[0] ?? '') as Record<string, unknown>;
    assert.equal(entry.level, 'info');
    assert.equal(entry.msg, 'removed finalizer');
    assert.equal(entry.pod, 'argo/wf-1');
    assert.match(String(entry.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('drops lines below the configured level', () => {
    const out = capture();
    const log = createLogger({ logLevel: 'warn', logFormat: 'json' }, out);
    log.debug({}, 'd');
    log.info({}, 'i');
    log.warn({}, 'w');
    log.error({}, 'e');
    assert.deepEqual(out.lines.map((l) => (JSON.parse(l) as { msg: string }).msg), ['w', 'e']);
  });

  test('a child adds its bindings to every line', () => {
    const { logger, records } = recordingLogger();
    logger.child({ component: 'worker' }).child({ worker: 3 }).info({ pod: 'p' }, 'patched');
    assert.deepEqual([records[0]?.component, records[0]?.worker, records[0]?.pod], ['worker', 3, 'p']);
  });

  test('an Error in err is serialized with its message and stack', () => {
    const { logger, records } = recordingLogger();
    logger.error({ err: new Error('boom') }, 'patch failed');
    const err = records[0]?.err as { message: string; stack: string };
    assert.equal(err.message, 'boom');
    assert.match(err.stack, /log\.test\.ts/);
  });
});

describe('createLogger, text format', () => {
  test('writes time, level, message and key=value fields, quoting values with spaces', () => {
    const out = capture();
    createLogger({ logLevel: 'info', logFormat: 'text' }, out).warn({ pod: 'argo/wf-1', why: 'owner gone', n: 2 }, 'skipping');
    assert.match(out.lines[0] ?? '', /^\S+Z WARN {2}skipping pod=argo\/wf-1 why="owner gone" n=2\n$/);
  });

  test('leaves out pid and hostname, which only matter to log pipelines', () => {
    const out = capture();
    createLogger({ logLevel: 'info', logFormat: 'text' }, out).info({}, 'started');
    assert.doesNotMatch(out.lines[0] ?? '', /pid=|hostname=/);
  });

  test('shows an error as err=message with its stack frames indented below', () => {
    const out = capture();
    createLogger({ logLevel: 'info', logFormat: 'text' }, out).error({ err: new Error('boom') }, 'patch failed');
    const [first, ...frames] = (out.lines[0] ?? '').trimEnd().split('\n');
    assert.match(first ?? '', /ERROR patch failed err=boom$/);
    assert.ok(frames.length > 0 && frames.every((f) => f.startsWith('    at ')), frames.join('\n'));
  });
});

describe('flush', () => {
  test('resolves after every line has reached the file, even through an asynchronous destination', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fs-log-'));
    try {
      const path = join(dir, 'out.log');
      const destination = pino.destination({ dest: path, sync: false, minLength: 4096 });
      const log = createLogger({ logLevel: 'info', logFormat: 'text' }, destination);
      for (let i = 0; i < 100; i++) log.info({ i }, 'line');
      await log.flush();
      assert.equal((await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').length, 100);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('resolves for a destination without flush', async () => {
    await createLogger({ logLevel: 'info', logFormat: 'json' }, capture()).flush();
  });
});

test('a child logger\'s bindings and a line\'s own fields never give a line the same key twice', () => {
  const lines: string[] = [];
  const logger = createLogger({ logLevel: 'debug', logFormat: 'json' }, { write: (line) => lines.push(line) });
  const child = logger.child({ resource: 'workflows', namespace: null }).child({ scope: 'a' });
  child.warn({ resource: 'workflows', namespace: 'ns', failures: 3 }, 'list/watch failed');
  child.info({}, 'plain');
  assert.deepEqual(lines.map(duplicateKeys), [[], []]);
  const [first, second] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual([first?.resource, first?.namespace, first?.scope, first?.failures], ['workflows', 'ns', 'a', 3], 'the line\'s own field wins');
  assert.deepEqual([second?.resource, second?.scope], ['workflows', 'a'], 'bindings reach every line');
});

describe('createLogger, on stderr', () => {
  test('lines still waiting in the batch are written when the process exits', () => {
    const log = new URL('./log.ts', import.meta.url).href;
    const script = `import { createLogger } from ${JSON.stringify(log)};
      createLogger({ logLevel: 'info', logFormat: 'json' }).info({ pod: 'argo/wf-1' }, 'finalizer removed');
      process.exit(0);`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stderr, /"msg":"finalizer removed"/);
  });
});
