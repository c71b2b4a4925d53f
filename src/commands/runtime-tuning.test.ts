import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MMAP_THRESHOLD, SEMI_SPACE_FLAG, needsMallocEnv, needsSemiSpaceCap } from './runtime-tuning.ts';

test('needsMallocEnv: only on Linux, and never over a threshold the operator set', () => {
  const rows: Array<[string, NodeJS.ProcessEnv, NodeJS.Platform, boolean]> = [
    ['Linux, nothing set', { PATH: '/usr/bin' }, 'linux', true],
    ['Linux, the variable set', { MALLOC_MMAP_THRESHOLD_: '131072' }, 'linux', false],
    ['Linux, the variable set empty', { MALLOC_MMAP_THRESHOLD_: '' }, 'linux', false],
    ['Linux, the glibc tunable set', { GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=4096' }, 'linux', false],
    ['Linux, another glibc tunable', { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, 'linux', true],
    ['macOS', {}, 'darwin', false],
    ['Windows', {}, 'win32', false],
  ];
  for (const [name, env, platform, want] of rows) assert.equal(needsMallocEnv(env, platform), want, name);
});

test('MMAP_THRESHOLD is the value the image and every manifest set', () => {
  const root = new URL('../../', import.meta.url);
  for (const file of ['deploy/Dockerfile', 'deploy/standalone/deployment.yaml', 'deploy/sidecar/container.yaml', 'deploy/helm/argo-workflows-values.yaml']) {
    const text = readFileSync(new URL(file, root), 'utf8');
    const value = /MALLOC_MMAP_THRESHOLD_(?:=|\s*\n\s*value:\s*)["']?(\d+)/.exec(text)?.[1];
    assert.equal(value, MMAP_THRESHOLD, file);
  }
});

test('needsSemiSpaceCap: only when neither node\'s command line nor NODE_OPTIONS caps the young generation', () => {
  const rows: Array<[string, string[], string | undefined, boolean]> = [
    ['nothing given', [], undefined, true],
    ['other flags only', ['--enable-source-maps'], '--max-old-space-size=300', true],
    ['on the command line', ['--max-semi-space-size=16'], undefined, false],
    ['on the command line, value apart', ['--max-semi-space-size', '16'], undefined, false],
    ['spelled with underscores', ['--max_semi_space_size=4'], undefined, false],
    ['in NODE_OPTIONS among others', [], '--enable-source-maps  --max-semi-space-size=2', false],
    ['a longer flag of another name', ['--max-semi-space-size-extra=1'], '', true],
  ];
  for (const [name, execArgv, nodeOptions, want] of rows) assert.equal(needsSemiSpaceCap(execArgv, nodeOptions), want, name);
});

test('SEMI_SPACE_FLAG is what the image\'s ENTRYPOINT gives node', () => {
  const text = readFileSync(new URL('../../deploy/Dockerfile', import.meta.url), 'utf8');
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(text)?.[1];
  assert.deepEqual(JSON.parse(entrypoint ?? 'null'), ['node', SEMI_SPACE_FLAG, '/app/dist/cli.js']);
});
