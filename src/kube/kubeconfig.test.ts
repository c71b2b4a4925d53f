import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKubeConfig, KubeConfigError } from './kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'fs-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfigFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

const TWO_CONTEXTS = `
apiVersion: v1
kind: Config
current-context: one
clusters:
- name: c1
  cluster: { server: "https://127.0.0.1:6443" }
- name: c2
  cluster: { server: "https://127.0.0.2:6443" }
users:
- name: u
  user: { token: secret }
contexts:
- name: one
  context: { cluster: c1, user: u }
- name: two
  context: { cluster: c2, user: u }
`;

function expectConfigError(fn: () => unknown, exitCode: 2 | 3, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof KubeConfigError);
    assert.equal(err.exitCode, exitCode);
    assert.match(err.message, message);
    return true;
  });
}

test('an explicit file is loaded with its current context', () => {
  const kc = loadKubeConfig({ kubeconfig: kubeconfigFile('a.yaml', TWO_CONTEXTS), context: null });
  assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.1:6443');
});

test('--context selects another context of the file', () => {
  const kc = loadKubeConfig({ kubeconfig: kubeconfigFile('b.yaml', TWO_CONTEXTS), context: 'two' });
  assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.2:6443');
});

test('an unknown context is a bad flag (exit 2) that lists the known ones', () => {
  const file = kubeconfigFile('c.yaml', TWO_CONTEXTS);
  expectConfigError(() => loadKubeConfig({ kubeconfig: file, context: 'three' }), 2, /unknown context "three".*"one", "two"/);
});

test('a missing file is a bad flag (exit 2) naming the file', () => {
  const file = join(dir, 'missing.yaml');
  expectConfigError(() => loadKubeConfig({ kubeconfig: file, context: null }), 2, /cannot read kubeconfig .*missing\.yaml/);
});

test('a file that is not YAML is a bad flag (exit 2)', () => {
  const file = kubeconfigFile('bad.yaml', 'clusters: [unclosed\n');
  expectConfigError(() => loadKubeConfig({ kubeconfig: file, context: null }), 2, /invalid kubeconfig/);
});

test('a context naming an undefined cluster is refused (exit 2)', () => {
  const file = kubeconfigFile('d.yaml', TWO_CONTEXTS.replace('cluster: c2', 'cluster: nowhere'));
  expectConfigError(() => loadKubeConfig({ kubeconfig: file, context: 'two' }), 2, /cluster the kubeconfig does not define/);
});

test('a file without a current context needs --context (exit 2)', () => {
  const file = kubeconfigFile('e.yaml', TWO_CONTEXTS.replace('current-context: one', ''));
  expectConfigError(() => loadKubeConfig({ kubeconfig: file, context: null }), 2, /no current context/);
});

test('without a flag, the file named by KUBECONFIG is used', (t) => {
  const file = kubeconfigFile('env.yaml', TWO_CONTEXTS);
  t.after(restoreEnv());
  process.env['KUBECONFIG'] = file;
  const kc = loadKubeConfig({ kubeconfig: null, context: 'two' });
  assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.2:6443');
});

test('with no kubeconfig anywhere and no service account, there is no cluster to reach (exit 3)', (t) => {
  t.after(restoreEnv());
  delete process.env['KUBECONFIG'];
  process.env['HOME'] = dir;
  expectConfigError(() => loadKubeConfig({ kubeconfig: null, context: null }), 3, /no kubeconfig found/);
});

function restoreEnv(): () => void {
  const saved = { KUBECONFIG: process.env['KUBECONFIG'], HOME: process.env['HOME'] };
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}
