import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfigError, loadTransport, type CredentialsInput } from './credentials.ts';

const dir = mkdtempSync(join(tmpdir(), 'fs-credentials-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

const base64 = (s: string) => Buffer.from(s).toString('base64');

function kubeconfig(o: { current?: string; clusters?: string; users?: string; contexts?: string }): string {
  return `apiVersion: v1
kind: Config
current-context: ${o.current ?? 'one'}
clusters:
${o.clusters ?? `- name: c1\n  cluster: { server: "https://127.0.0.1:6443", certificate-authority-data: ${base64('CA-ONE')} }`}
users:
${o.users ?? '- name: u\n  user: { token: secret }'}
contexts:
${o.contexts ?? '- name: one\n  context: { cluster: c1, user: u }\n- name: two\n  context: { cluster: c1, user: u }'}
`;
}

const isolated: Partial<CredentialsInput> = { env: {}, home: join(dir, 'no-home'), serviceAccountDir: join(dir, 'no-sa') };

async function expectError(input: CredentialsInput, exitCode: 2 | 3, message: RegExp): Promise<void> {
  await assert.rejects(loadTransport(input), (err: unknown) => {
    assert.ok(err instanceof KubeConfigError, String(err));
    assert.equal(err.exitCode, exitCode);
    assert.match(err.message, message);
    return true;
  });
}

test('loadTransport: a bearer token and CA data from the current context', async () => {
  const t = await loadTransport({ ...isolated, kubeconfig: file('token.yaml', kubeconfig({})), context: null });
  assert.equal(t.server, 'https://127.0.0.1:6443');
  assert.equal(String(t.tls.ca), 'CA-ONE');
  assert.deepEqual(await t.headers(), { Authorization: 'Bearer secret' });
});

test('loadTransport: --context selects another context', async () => {
  const cfg = kubeconfig({
    clusters: `- name: c1\n  cluster: { server: "https://one:6443" }\n- name: c2\n  cluster: { server: "https://two:6443" }`,
    contexts: '- name: one\n  context: { cluster: c1, user: u }\n- name: two\n  context: { cluster: c2, user: u }',
  });
  const t = await loadTransport({ ...isolated, kubeconfig: file('ctx.yaml', cfg), context: 'two' });
  assert.equal(t.server, 'https://two:6443');
});

test('loadTransport: certificate files are read relative to the kubeconfig, a token file on every refresh', async () => {
  file('rel/ca.crt', 'CA-FILE');
  file('rel/client.crt', 'CERT');
  file('rel/client.key', 'KEY');
  const tokenFile = file('rel/token', 'first\n');
  const cfg = kubeconfig({
    clusters: '- name: c1\n  cluster: { server: "https://x:6443", certificate-authority: ca.crt, tls-server-name: api.internal }',
    users: '- name: u\n  user: { client-certificate: client.crt, client-key: client.key, tokenFile: token, as: alice }',
  });
  const t = await loadTransport({ ...isolated, kubeconfig: file('rel/config', cfg), context: null });
  assert.deepEqual([String(t.tls.ca), String(t.tls.cert), String(t.tls.key), t.tls.servername], ['CA-FILE', 'CERT', 'KEY', 'api.internal']);
  assert.deepEqual(await t.headers(), { 'Impersonate-User': 'alice', Authorization: 'Bearer first' });
  writeFileSync(tokenFile, 'rotated\n');
  assert.equal((await t.headers())['Authorization'], 'Bearer rotated');
});

test('loadTransport: insecure-skip-tls-verify turns verification off; basic auth is sent as such', async () => {
  const cfg = kubeconfig({
    clusters: '- name: c1\n  cluster: { server: "https://x:6443", insecure-skip-tls-verify: true }',
    users: '- name: u\n  user: { username: admin, password: pw }',
  });
  const t = await loadTransport({ ...isolated, kubeconfig: file('basic.yaml', cfg), context: null });
  assert.equal(t.tls.rejectUnauthorized, false);
  assert.equal((await t.headers())['Authorization'], `Basic ${base64('admin:pw')}`);
});

test('loadTransport: KUBECONFIG files are merged, the first to define a name or current-context wins', async () => {
  const a = file('merge-a.yaml', 'apiVersion: v1\nkind: Config\ncurrent-context: two\nusers:\n- name: u\n  user: { token: from-a }\n');
  const b = file('merge-b.yaml', kubeconfig({ current: 'one', users: '- name: u\n  user: { token: from-b }' }));
  const t = await loadTransport({ ...isolated, env: { KUBECONFIG: `${a}:${b}:${join(dir, 'missing')}` }, kubeconfig: null, context: null });
  assert.equal(t.server, 'https://127.0.0.1:6443');
  assert.deepEqual(await t.headers(), { Authorization: 'Bearer from-a' });
});

test('loadTransport: ~/.kube/config when nothing else is given', async () => {
  const home = join(dir, 'home');
  file('home/.kube/config', kubeconfig({}));
  const t = await loadTransport({ ...isolated, home, kubeconfig: null, context: null });
  assert.equal(t.server, 'https://127.0.0.1:6443');
});

test('loadTransport: in a cluster, the service account token (re-read on refresh) and CA', async () => {
  const sa = join(dir, 'sa');
  file('sa/token', 'sa-token\n');
  file('sa/ca.crt', 'SA-CA');
  const t = await loadTransport({ ...isolated, serviceAccountDir: sa, env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, kubeconfig: null, context: null });
  assert.equal(t.server, 'https://[fd00::1]:443');
  assert.equal(String(t.tls.ca), 'SA-CA');
  assert.deepEqual(await t.headers(), { Authorization: 'Bearer sa-token' });
  writeFileSync(join(sa, 'token'), 'next');
  assert.deepEqual(await t.headers(), { Authorization: 'Bearer next' });
});

test('loadTransport: an exec plugin goes through client-node, which runs it', async () => {
  const plugin = file('plugin.sh', `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`);
  chmodSync(plugin, 0o755);
  const cfg = kubeconfig({ users: `- name: u\n  user:\n    exec: { apiVersion: client.authentication.k8s.io/v1beta1, command: ${plugin} }` });
  const t = await loadTransport({ ...isolated, kubeconfig: file('exec.yaml', cfg), context: null });
  assert.equal((await t.headers())['Authorization'], 'Bearer from-exec');
});

const mistakes: Array<[string, () => CredentialsInput, 2 | 3, RegExp]> = [
  ['an unknown context, listing the known ones', () => ({ ...isolated, kubeconfig: file('m1.yaml', kubeconfig({})), context: 'three' }), 2, /unknown context "three".*"one", "two"/],
  ['an unreadable file', () => ({ ...isolated, kubeconfig: join(dir, 'nope.yaml'), context: null }), 2, /cannot read kubeconfig .*nope\.yaml/],
  ['malformed YAML', () => ({ ...isolated, kubeconfig: file('m2.yaml', 'clusters: [\n'), context: null }), 2, /invalid kubeconfig/],
  ['a context naming an undefined cluster', () => ({ ...isolated, kubeconfig: file('m3.yaml', kubeconfig({ contexts: '- name: one\n  context: { cluster: gone, user: u }' })), context: null }), 2, /cluster the kubeconfig does not define/],
  ['a context naming an undefined user', () => ({ ...isolated, kubeconfig: file('m4.yaml', kubeconfig({ contexts: '- name: one\n  context: { cluster: c1, user: gone }' })), context: null }), 2, /user the kubeconfig does not define/],
  ['no current context', () => ({ ...isolated, kubeconfig: file('m5.yaml', kubeconfig({ current: '""' })), context: null }), 2, /no current context/],
  ['proxy-url', () => ({ ...isolated, kubeconfig: file('m6.yaml', kubeconfig({ clusters: '- name: c1\n  cluster: { server: "https://x", proxy-url: "http://proxy:3128" }' })), context: null }), 2, /proxy-url/],
  ['a missing certificate file', () => ({ ...isolated, kubeconfig: file('m7.yaml', kubeconfig({ users: '- name: u\n  user: { client-certificate: absent.crt, client-key: absent.key }' })), context: null }), 3, /cannot obtain credentials/],
  ['nothing at all, outside a cluster', () => ({ ...isolated, kubeconfig: null, context: null }), 3, /no kubeconfig found/],
];

for (const [what, input, exitCode, message] of mistakes) {
  test(`loadTransport: ${what} → exit code ${exitCode}`, () => expectError(input(), exitCode, message));
}

/** modulesLoadedBy lists every module URL a fresh process resolves while importing `path`. */
async function modulesLoadedBy(path: string): Promise<string[]> {
  const { execFileSync } = await import('node:child_process');
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r; } });
    await import(${JSON.stringify(new URL(path, import.meta.url).href)});
    console.log(JSON.stringify(seen));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script]).toString()) as string[];
}

test('loadTransport: importing it does not load @kubernetes/client-node (about 85 MiB of memory)', async () => {
  const loaded = await modulesLoadedBy('./credentials.ts');
  assert.ok(loaded.some((u) => u.includes('js-yaml')), 'the hook sees what is loaded');
  assert.ok(!loaded.some((u) => u.includes('@kubernetes/client-node')), loaded.join('\n'));
});

test('neither the controller nor the sweep command loads @kubernetes/client-node unless a kubeconfig needs a plugin', async () => {
  for (const command of ['../commands/controller.ts', '../commands/sweep.ts']) {
    const loaded = await modulesLoadedBy(command);
    assert.ok(!loaded.some((u) => u.includes('@kubernetes/client-node')), `${command} loads it`);
  }
});
