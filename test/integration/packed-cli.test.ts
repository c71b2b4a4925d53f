// The package as it ships: `npm pack` of the repo (which builds dist/) as the release packs it
// (src/release/package-artifacts.ts), the tarball's file list, its SBOM, and the tarball installed
// as an operator installs it, with `npm install -g` into a prefix of its own and through `npx`,
// under every supported Node major, each running `--version`, `--help` and `sweep --dry-run
// --output json` against the real control plane. This is the test of the compiled dist/: the other
// tests run the TypeScript sources, which Node does not strip once they sit under node_modules.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { SweepSummary } from '../../src/commands/sweep-tally.ts';
import { packageSbom, packTarball, withoutNpmVariables } from '../../src/release/package-artifacts.ts';
import { newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { nodeBinDir } from '../../src/testbed/node-versions.ts';
import { podsLogged, runCli, type CliResult } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');
/**
 * SUPPORTED_NODE_MAJORS are the long-term-support majors that package.json's engines
 * ("^22.19.0 || >=24") admits. Node 25, an odd release past its end of life, is admitted by ">=24"
 * but not tested.
 */
const SUPPORTED_NODE_MAJORS = [22, 24, 26];
/** An install fetches the dependencies from the registry (about 120 packages); slow on a loaded machine, never a hang. */
const INSTALL_TIMEOUT_MS = 300_000;
const WOULD_REMOVE = 'dry run: finalizer would be removed';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

let scratch: string;
let tarball: string;
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-packed-'));
  tarball = await packTarball(scratch);
});
after(() => rm(scratch, { recursive: true, force: true }));

// --- what ships -------------------------------------------------------------------------------

test('npm pack ships dist/, config/, the README, the license and package.json, and nothing else', async () => {
  const { stdout } = await run('tar', ['-tzf', tarball]);
  const files = stdout.split('\n').filter((f) => f !== '').map((f) => f.replace(/^package\//, ''));

  for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/cli.js', 'dist/cli.js.map', 'config/workflow-crd.yaml', 'config/finalizer-sweeper.yaml']) {
    assert.ok(files.includes(f), `${f} should be in the tarball`);
  }
  const atTop = new Set(['package.json', 'README.md', 'LICENSE']);
  assert.deepEqual(files.filter((f) => !atTop.has(f) && !/^(dist|config)\//.test(f)), []);
  assert.deepEqual(files.filter((f) => f.endsWith('.ts')), [], 'no TypeScript: what ships is compiled');
  assert.deepEqual(files.filter((f) => /(^|\/)(test|bench|testbed|demo|fixtures)(\/|$)|\.test\.|(^|\/)fake-/.test(f)), [], 'no tests, benchmarks, test bed, demo or fixtures');
});

test('the release\'s SBOM of the package names it, and every production dependency at the version package-lock.json pins, with its integrity', async () => {
  const sbom = await packageSbom(join(scratch, 'package.cdx.json'));
  const pkg = await packageJson();
  const lock = JSON.parse(await readFile(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };

  assert.deepEqual([sbom.bomFormat, sbom.metadata.component.name, sbom.metadata.component.version, sbom.metadata.component.purl], ['CycloneDX', pkg.name, pkg.version, `pkg:npm/${pkg.name}@${pkg.version}`]);
  const listed = new Map(sbom.components.map((c) => [c.name, c]));
  for (const name of Object.keys(pkg.dependencies)) {
    const component = listed.get(name);
    assert.equal(component?.version, lock.packages[`node_modules/${name}`]?.version, name);
    assert.ok(component?.hashes?.some((h) => h.alg === 'SHA-512'), `${name} carries its integrity`);
  }
  assert.deepEqual(['typescript', 'eslint', 'typescript-eslint'].filter((name) => listed.has(name)), [], 'no development dependency');
});

// --- what an operator runs --------------------------------------------------------------------

for (const major of SUPPORTED_NODE_MAJORS) {
  test(`on Node ${major}, the tarball installed with npm install -g and run through npx sweeps a dry run`, async (t) => {
    const env = await operatorEnv(major);
    const ns = await newNamespace(t);
    await orphanAndUnrecorded(ns);
    const before = await podStates(ns);
    const args = ['sweep', '--dry-run', '--output', 'json', '--kubeconfig', kubeconfigPath, '--namespace', ns];

    await t.test('npm install -g', async () => {
      const prefix = join(scratch, `global-node-${major}`);
      await run('npm', ['install', '--global', '--prefix', prefix, tarball], { cwd: scratch, env, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 << 20 });
      const bin: [string] = [join(prefix, 'bin', 'finalizer-sweeper')];
      const version = await runCli(['--version'], { command: bin, env, cwd: scratch });
      assert.deepEqual([version.code, version.stdout], [0, `${(await packageJson()).version}\n`], version.stderr);
      const help = await runCli(['--help'], { command: bin, env, cwd: scratch });
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^finalizer-sweeper \[controller\|sweep\|explain\|status\] \[flags\]$/m);
      const result = await runCli(args, { command: bin, env, cwd: scratch });
      assertDryRunOfScene(result, ns);
      assert.deepEqual(await podStates(ns), before, 'the dry run changed nothing');
    });

    await t.test('npx', async () => {
      const npx: [string, ...string[]] = ['npx', '--yes', '--package', tarball, '--', 'finalizer-sweeper'];
      const result = await runCli(args, { command: npx, env, cwd: scratch, timeoutMs: INSTALL_TIMEOUT_MS });
      assertDryRunOfScene(result, ns);
      assert.deepEqual(await podStates(ns), before, 'the dry run changed nothing');
    });
  });
}

test('on Node 20, which npm installs it under with only a warning, the command says in one line which Node it needs and exits 2', async () => {
  const env = await operatorEnv(20, { engineStrict: false });
  const prefix = join(scratch, 'global-node-20');
  await run('npm', ['install', '--global', '--prefix', prefix, tarball], { cwd: scratch, env, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 << 20 });
  const result = await runCli(['sweep', '--dry-run', '--kubeconfig', kubeconfigPath], { command: [join(prefix, 'bin', 'finalizer-sweeper')], env, cwd: scratch });
  assert.equal(result.code, 2, result.stderr);
  assert.match(result.stderr, /^finalizer-sweeper: needs Node \^22\.19\.0 \|\| >=24 \(Node 24 LTS recommended\); this is Node 20\.\d+\.\d+\n$/);
  assert.equal(result.stdout, '');
});

/**
 * operatorEnv is a shell with Node `major` first on PATH (npm, npx and the installed bin's
 * `#!/usr/bin/env node` all run on it), installs that refuse a Node outside the engines of the
 * package or of any dependency (unless engineStrict is false, npm's own default), and an npm cache of its own, so that npx installs afresh on each major.
 */
async function operatorEnv(major: number, o: { engineStrict: boolean } = { engineStrict: true }): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {
    ...withoutNpmVariables(process.env),
    PATH: `${await nodeBinDir(major)}${delimiter}${process.env.PATH ?? ''}`,
    npm_config_cache: join(scratch, `npm-cache-node-${major}`),
    npm_config_engine_strict: String(o.engineStrict),
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  const { stdout } = await run('node', ['--version'], { env });
  assert.match(stdout, new RegExp(`^v${major}\\.`), `node on the operator's PATH should be Node ${major}`);
  return env;
}

async function packageJson(): Promise<{ name: string; version: string; dependencies: Record<string, string> }> {
  return JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string> };
}

/**
 * orphanAndUnrecorded creates a pod whose Workflow was deleted (`orphan`, eligible: owner-gone) and
 * a pod of a live Workflow that has not recorded it (`unrecorded`, kept: owner-alive-unrecorded).
 * It returns once the garbage collector has marked the orphan Terminating, so that nothing but the
 * sweep could write afterwards.
 */
async function orphanAndUnrecorded(ns: string): Promise<void> {
  const gone = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  const live = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  await cluster.createPods([
    newPod({ namespace: ns, name: 'orphan', workflow: { name: 'gone', uid: gone.metadata.uid ?? '' } }),
    newPod({ namespace: ns, name: 'unrecorded', workflow: { name: 'live', uid: live.metadata.uid ?? '' } }),
  ]);
  await cluster.deleteWorkflow(ns, 'gone');
  await cluster.waitFor(async () => (await cluster.getPod(ns, 'orphan'))?.metadata.deletionTimestamp !== undefined, 60_000, 'the garbage collector to mark the orphan Terminating');
}

/** podStates maps each pod of the namespace to its resourceVersion and finalizers. */
async function podStates(ns: string): Promise<Map<string, { resourceVersion: string; finalizers: string[] }>> {
  const pods = await cluster.listPods(ns);
  return new Map(pods.map((p: PodObject) => [p.metadata.name, { resourceVersion: p.metadata.resourceVersion ?? '', finalizers: p.metadata.finalizers ?? [] }]));
}

/** assertDryRunOfScene checks the summary of a dry run over orphanAndUnrecorded's scene. */
function assertDryRunOfScene(result: CliResult, ns: string): void {
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^\{.*\}\n$/, `stdout should be one JSON object; stderr:\n${result.stderr}`);
  const s = JSON.parse(result.stdout) as SweepSummary;
  assert.equal(s.dryRun, true);
  assert.equal(s.podsListed, 2);
  assert.equal(s.podsWithFinalizer, 2);
  assert.deepEqual(s.reasons['owner-gone'], { found: 1, removed: 1, alreadyGone: 0, skipped: 0, failed: 0 });
  assert.deepEqual(s.totals, { found: 1, removed: 1, alreadyGone: 0, skipped: 0, failed: 0 });
  assert.deepEqual(s.kept, { 'owner-alive-unrecorded': 1, 'owner-alive-offloaded': 0, unattributable: 0, 'reason-filtered': 0, 'max-removals': 0 });
  assert.deepEqual(podsLogged(result.stderr, WOULD_REMOVE), [`${ns}/orphan`]);
}
