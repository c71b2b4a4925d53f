import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MMAP_THRESHOLD, needsMallocEnv } from './malloc-env.ts';

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
