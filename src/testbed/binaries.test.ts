import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cacheDir, KUBE_VERSION_ENV, KUBE_VERSIONS, kubeVersion } from './binaries.ts';

test('cacheDir prefers FINALIZER_SWEEPER_CACHE_DIR', () => {
  assert.equal(cacheDir({ FINALIZER_SWEEPER_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x', HOME: '/h' }), '/c');
});

test('cacheDir falls back to XDG_CACHE_HOME, then to ~/.cache', () => {
  assert.equal(cacheDir({ XDG_CACHE_HOME: '/x', HOME: '/h' }), '/x/finalizer-sweeper');
  assert.equal(cacheDir({ HOME: '/h' }), '/h/.cache/finalizer-sweeper');
});

test('kubeVersion: unset is the newest; a minor or a version, with or without v, picks a tested release; anything else names them', () => {
  assert.equal(kubeVersion({}), KUBE_VERSIONS[0]);
  assert.equal(kubeVersion({ [KUBE_VERSION_ENV]: '' }), KUBE_VERSIONS[0]);
  for (const v of KUBE_VERSIONS) {
    const minor = v.split('.').slice(0, 2).join('.');
    assert.equal(kubeVersion({ [KUBE_VERSION_ENV]: v }), v);
    assert.equal(kubeVersion({ [KUBE_VERSION_ENV]: v.slice(1) }), v);
    assert.equal(kubeVersion({ [KUBE_VERSION_ENV]: minor.slice(1) }), v);
  }
  assert.throws(() => kubeVersion({ [KUBE_VERSION_ENV]: '1.20' }), /not a release the test bed builds; choose one of v1\.37\.2/);
  assert.throws(() => kubeVersion({ [KUBE_VERSION_ENV]: '1.3' }), /not a release/, 'a prefix of a minor is no minor');
});
