import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cacheDir } from './binaries.ts';

test('cacheDir prefers FINALIZER_SWEEPER_CACHE_DIR', () => {
  assert.equal(cacheDir({ FINALIZER_SWEEPER_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x', HOME: '/h' }), '/c');
});

test('cacheDir falls back to XDG_CACHE_HOME, then to ~/.cache', () => {
  assert.equal(cacheDir({ XDG_CACHE_HOME: '/x', HOME: '/h' }), '/x/finalizer-sweeper');
  assert.equal(cacheDir({ HOME: '/h' }), '/h/.cache/finalizer-sweeper');
});
