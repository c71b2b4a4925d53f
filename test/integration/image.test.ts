// The shipped image, built from deploy/Dockerfile and run as the Deployments run it: UID/GID
// 65532, a read-only root filesystem with no writable mount at all, every capability dropped, no
// privilege escalation, and in-cluster credentials (KUBERNETES_SERVICE_HOST/PORT and a service
// account's token, CA and namespace mounted where the kubelet puts them), against the shared
// control plane; and under an arbitrary UID with GID 0, as OpenShift's restricted-v2 SCC runs it.
// Both final stages are built and run: distroless (the default) and Debian slim.
// The base images are local stand-ins built from Debian's mirror and the npm registry
// (src/testbed/images.ts), since no container registry is reachable here.
//
// The distroless image is also saved as the release saves it (src/release/main.ts: an OCI archive,
// with syft's SBOM), then loaded into an empty image store and run: the release's archive is the
// image these tests ran, not a second build.
//
// Needs podman (installed as root on Debian if missing). Without an engine, and no way to install
// one, the tests fail: a missing engine must not pass for a working image. Only an explicit
// FINALIZER_SWEEPER_SKIP_IMAGE_TESTS=1 skips them, with the reason printed.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Cluster } from '../../src/testbed/cluster.ts';
import { SERVICE_ACCOUNTS, contextOf, freePort } from '../../src/testbed/control-plane-files.ts';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { FLAVOURS, buildImage, ensureBaseImages, type BaseImages, type Flavour } from '../../src/testbed/images.ts';
import { Podman, type Container } from '../../src/testbed/podman.ts';
import { useTestCluster } from '../support/cluster.ts';
import { findSyft, imageSbom } from '../../src/release/syft.ts';
import type { CycloneDx } from '../../src/release/package-artifacts.ts';
import { logLines } from '../support/cli.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

/** LONG bounds every wait: far above what any step needs, so that only a real failure trips it. */
const LONG = 90_000;
const UID = 65532;
/** ASSIGNED is a UID from the kind of range OpenShift allocates a namespace, with GID 0, as restricted-v2 runs a pod without runAsUser. */
const ASSIGNED = '1000680000:0';
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** SECURITY is the Deployments' securityContext in podman's words (runAsUser/runAsGroup go in --user). */
const SECURITY = ['--read-only', '--read-only-tmpfs=false', '--cap-drop', 'all', '--security-opt', 'no-new-privileges'];

const optedOut = process.env['FINALIZER_SWEEPER_SKIP_IMAGE_TESTS'] === '1';
const engine = optedOut ? { unavailable: 'not looked for' } : await Podman.find();
if (optedOut) console.log('# image tests skipped: FINALIZER_SWEEPER_SKIP_IMAGE_TESTS=1');
const skip = optedOut ? 'FINALIZER_SWEEPER_SKIP_IMAGE_TESTS=1' : false;

function podman(): Podman {
  if ('unavailable' in engine) throw new Error(`the image tests need a container engine (set FINALIZER_SWEEPER_SKIP_IMAGE_TESTS=1 to skip them): ${engine.unavailable}`);
  return engine;
}

let bases: Promise<BaseImages> | undefined;
const images = new Map<Flavour, Promise<string>>();

/** image builds a flavour's image once per run (the base images first, once); later calls reuse it. */
function image(t: TestContext, flavour: Flavour): Promise<string> {
  let built = images.get(flavour);
  if (built === undefined) {
    built = (async () => {
      const started = performance.now();
      bases ??= ensureBaseImages(podman());
      const tag = await buildImage(podman(), await bases, flavour);
      const size = await podman().imageSize(tag);
      t.diagnostic(`${flavour} image ${tag}: ${(size / 1e6).toFixed(1)} MB, built in ${seconds(started)} s`);
      return tag;
    })();
    images.set(flavour, built);
  }
  return built;
}

for (const flavour of FLAVOURS) {
  test(`the ${flavour} image is configured to run node --max-semi-space-size=8 /app/dist/cli.js controller as ${UID}:${UID}`, { skip }, async (t) => {
    const tag = await image(t, flavour);

    const config = await podman().runOnce(tag, ['--entrypoint', 'node', '--user', `${UID}:${UID}`, ...SECURITY], [
      '-p', 'JSON.stringify({ uid: process.getuid(), gid: process.getgid() })',
    ]);
    assert.deepEqual(JSON.parse(config), { uid: UID, gid: UID });
    assert.deepEqual(await podman().imageConfig(tag), {
      user: `${UID}:${UID}`,
      entrypoint: ['node', '--max-semi-space-size=8', '/app/dist/cli.js'],
      cmd: ['controller'],
    });
  });

  test(`every module of dist/ loads in the ${flavour} image, with production dependencies only`, { skip }, async (t) => {
    const tag = await image(t, flavour);

    // Modules reached only through a dynamic import (client-node, for exec plugins) count too.
    // The two that run the command when loaded (the entry and the command line) are left out;
    // the other tests run them.
    const script = `
      import { readdirSync } from 'node:fs';
      const files = readdirSync('/app/dist', { recursive: true }).filter((f) => f.endsWith('.js') && f !== 'cli.js' && f !== 'command-line.js');
      for (const f of files) await import('/app/dist/' + f);
      console.log(JSON.stringify(files.sort()));`;
    const out = await podman().runOnce(tag, ['--entrypoint', 'node', '--user', `${UID}:${UID}`, ...SECURITY], ['--input-type=module', '-e', script]);

    const loaded = JSON.parse(out) as string[];
    for (const module of ['commands/controller.js', 'commands/sweep.js', 'kube/kubeconfig.js', 'version.js']) {
      assert.ok(loaded.includes(module), `${module} should be among the ${loaded.length} modules loaded`);
    }
    assert.ok(!loaded.some((f) => f.includes('testbed/') || f.includes('demo/') || f.endsWith('.test.js')), loaded.join(', '));
  });

  test(`the ${flavour} image runs in-cluster, non-root, read-only, without capabilities: ready, metrics, an orphan freed, a live unrecorded pod kept`, { skip }, async (t) => {
    const tag = await image(t, flavour);
    const ns = await newNamespace(t);
    const live = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
    const gone = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
    await cluster.createPods([
      newPod({ namespace: ns, name: 'live-step', workflow: { name: 'live', uid: live.metadata.uid ?? '' } }),
      newPod({ namespace: ns, name: 'gone-step', workflow: { name: 'gone', uid: gone.metadata.uid ?? '' } }),
    ]);
    await cluster.deleteWorkflow(ns, 'gone');
    await cluster.waitFor(async () => (await cluster.getPod(ns, 'gone-step'))?.metadata.deletionTimestamp, LONG, 'the garbage collector to mark the orphan Terminating');
    const liveBefore = await cluster.getPod(ns, 'live-step');

    const metricsPort = await freePort();
    const healthPort = await freePort();
    const container = await runInCluster(t, tag, ns, [
      'controller', '--namespace', ns, '--leader-elect', '--leader-election-namespace', ns,
      '--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-probe-bind-address', `127.0.0.1:${healthPort}`,
      '--resync-period', '1s', '--log-format', 'json', '--log-level', 'debug',
    ]);
    const fail = async (err: unknown): Promise<never> => {
      throw new Error(`${String(err)}\nthe container's last output:\n${(await container.logs()).slice(-4000)}`);
    };

    const pid = await container.pid();
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    assert.deepEqual(
      pick(status, ['Uid', 'Gid', 'CapPrm', 'CapEff', 'CapBnd', 'NoNewPrivs', 'Seccomp']),
      // Seccomp 2 is filter mode: podman's default profile, as RuntimeDefault is the runtime's.
      { Uid: `${UID} ${UID} ${UID} ${UID}`, Gid: `${UID} ${UID} ${UID} ${UID}`, CapPrm: '0'.repeat(16), CapEff: '0'.repeat(16), CapBnd: '0'.repeat(16), NoNewPrivs: '1', Seccomp: '2' },
    );
    assert.deepEqual(writableMounts(await readFile(`/proc/${pid}/mountinfo`, 'utf8')), [], 'the root filesystem and every mount under it should be read-only');

    await cluster.waitFor(async () => (await get(healthPort, '/readyz')).status === 200, LONG, '/readyz to answer 200').catch(fail);
    const metrics = await get(metricsPort, '/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /^finalizer_sweeper_build_info\{version="0\.1\.0",node_version="v24\.[^"]+"\} 1$/m);

    await cluster.waitFor(async () => (await cluster.getPod(ns, 'gone-step')) === null, LONG, 'the orphan to be freed and deleted').catch(fail);
    const lease = await cluster.client.call<{ spec?: { holderIdentity?: string } }>('GET', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/finalizer-sweeper`);
    assert.ok(lease.spec?.holderIdentity, 'the controller should hold its Lease');

    // Three resyncs after the orphan went: the live pod has then been decided again, three times.
    const resyncs = async (): Promise<number> => logLines(await container.logs()).filter((l) => l.msg === 'resync').length;
    const target = (await resyncs()) + 3;
    await cluster.waitFor(async () => (await resyncs()) >= target, LONG, 'three more resync passes').catch(fail);
    const liveAfter = await cluster.getPod(ns, 'live-step');
    assert.ok(holdsOurs(liveAfter), 'the live, unrecorded pod should keep the finalizer');
    assert.equal(liveAfter?.metadata.resourceVersion, liveBefore?.metadata.resourceVersion, 'nothing should have been written to the live pod');

    const memory = pick(await readFile(`/proc/${pid}/status`, 'utf8'), ['VmRSS', 'VmHWM']);
    const mib = (kB: string | undefined): string => (Number.parseInt(kB ?? '', 10) / 1024).toFixed(1);
    t.diagnostic(`${flavour} container RSS ${mib(memory['VmRSS'])} MiB (peak ${mib(memory['VmHWM'])} MiB): synced, leading, after one removal`);

    assert.equal(await container.stop(30), 0, 'node, PID 1 in the container, should exit 0 on SIGTERM');
    const output = await container.logs();
    assert.deepEqual(logLines(output).filter((l) => l.level === 'error' || l.level === 'fatal'), []);
    assert.doesNotMatch(output, /EROFS|read-only file system|EACCES/i);
  });

  test(`the ${flavour} image holds nothing of the npm settings handed to its build`, { skip }, async (t) => {
    const tag = await image(t, flavour);

    // The NPMRC build argument is used in the build stage alone, whose history the image does not carry.
    const history = await podman().imageHistory(tag);
    assert.ok(history.some((line) => line.includes('dist')), history.join('\n'));
    assert.deepEqual(history.filter((line) => /npmrc|registry=|BEGIN CERTIFICATE/i.test(line)), []);
  });

  test(`the ${flavour} image runs under any UID with GID 0, as OpenShift assigns them: every file of /app readable, ready in-cluster, exits 0 on SIGTERM`, { skip }, async (t) => {
    const tag = await image(t, flavour);
    const unreadable = `
      import { accessSync, constants, readdirSync } from 'node:fs';
      const files = readdirSync('/app', { recursive: true }).map((f) => '/app/' + f);
      console.log(JSON.stringify(files.filter((f) => { try { accessSync(f, constants.R_OK); return false; } catch { return true; } })));`;
    const found = await podman().runOnce(tag, ['--entrypoint', 'node', '--user', ASSIGNED, ...SECURITY], ['--input-type=module', '-e', unreadable]);
    assert.deepEqual(JSON.parse(found), []);

    const ns = await newNamespace(t);
    const healthPort = await freePort();
    const container = await runInCluster(t, tag, ns, [
      'controller', '--namespace', ns, '--leader-elect', '--leader-election-namespace', ns,
      '--metrics-bind-address', '0', '--health-probe-bind-address', `127.0.0.1:${healthPort}`, '--log-format', 'json',
    ], ASSIGNED);
    await cluster.waitFor(async () => (await get(healthPort, '/readyz')).status === 200, LONG, '/readyz to answer 200').catch(async (err: unknown) => {
      throw new Error(`${String(err)}\nthe container's last output:\n${(await container.logs()).slice(-4000)}`);
    });
    const status = await readFile(`/proc/${await container.pid()}/status`, 'utf8');
    const [uid, gid] = ASSIGNED.split(':');
    assert.deepEqual(pick(status, ['Uid', 'Gid']), { Uid: Array(4).fill(uid).join(' '), Gid: Array(4).fill(gid).join(' ') });

    assert.equal(await container.stop(30), 0);
    const output = await container.logs();
    assert.deepEqual(logLines(output).filter((l) => l.level === 'error' || l.level === 'fatal'), []);
    assert.doesNotMatch(output, /EROFS|read-only file system|EACCES|uv_os_homedir/i);
  });
}

test('the release\'s OCI archive of the distroless image loads into an empty store and runs --version; its SBOM lists Node and the npm packages', { skip }, async (t) => {
  const tag = await image(t, 'distroless');
  // Short: podman refuses a runroot path over 50 characters.
  const dir = await mkdtemp(join(tmpdir(), 'fs-release-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const archive = join(dir, 'finalizer-sweeper-linux-amd64.oci.tar');
  let started = performance.now();
  await podman().saveOciArchive(tag, archive);
  t.diagnostic(`OCI archive: ${((await stat(archive)).size / 1e6).toFixed(1)} MB, saved in ${seconds(started)} s`);

  const elsewhere = podman().inStore(join(dir, 'store'));
  const loaded = await elsewhere.load(archive);
  assert.equal(loaded.length, 1, `one image loaded: ${loaded.join(', ')}`);
  const { version } = JSON.parse(await readFile(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
  assert.equal(await elsewhere.runOnce(loaded[0] ?? '', ['--user', `${UID}:${UID}`, ...SECURITY], ['--version']), `${version}\n`);

  started = performance.now();
  await imageSbom(await findSyft(), archive, `${archive}.cdx.json`);
  const sbom = JSON.parse(await readFile(`${archive}.cdx.json`, 'utf8')) as CycloneDx;
  t.diagnostic(`image SBOM: ${sbom.components.length} components, in ${seconds(started)} s`);
  assert.equal(sbom.bomFormat, 'CycloneDX');
  const names = new Set(sbom.components.map((c) => c.name));
  const dependencies = Object.keys((JSON.parse(await readFile(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
  assert.deepEqual(dependencies.filter((d) => !names.has(d)), [], 'every production dependency, found under /app/node_modules');
  assert.ok(sbom.components.some((c) => c.name === 'node' && /^24\./.test(c.version)), 'Node, found by its binary');
});

/**
 * runInCluster starts the image as the kubelet would for our Deployments: the security context,
 * KUBERNETES_SERVICE_HOST/PORT, and the service account's token, CA and namespace in their usual
 * folder. The token is one of the test bed's service-account identities, so API Priority and
 * Fairness treats the container as the service account it would be in a cluster.
 */
async function runInCluster(t: TestContext, tag: string, namespace: string, args: string[], user = `${UID}:${UID}`): Promise<Container> {
  const identity = Cluster.fromKubeconfig(kubeconfigPath, contextOf(SERVICE_ACCOUNTS[0]));
  const { server, token, caData } = identity.client.connection;
  identity.close();
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-sa-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  // The kubelet's default mode for these files is 0644; the container's user must read them.
  await chmod(dir, 0o755);
  await writeFile(join(dir, 'token'), token, { mode: 0o644 });
  await writeFile(join(dir, 'ca.crt'), Buffer.from(caData, 'base64'), { mode: 0o644 });
  await writeFile(join(dir, 'namespace'), namespace, { mode: 0o644 });

  // The API server's serving certificate covers 127.0.0.1, which the host network reaches.
  const url = new URL(server);
  const container = await podman().run({
    image: tag,
    name: `finalizer-sweeper-image-test-${namespace}`,
    args,
    user,
    env: { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port },
    mounts: { [dir]: SERVICE_ACCOUNT_DIR },
    flags: SECURITY,
    maxSeconds: 600,
  });
  t.after(() => container.remove());
  return container;
}

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

/** pick reads fields of a /proc/PID/status text, whitespace collapsed. */
function pick(status: string, fields: string[]): Record<string, string> {
  return Object.fromEntries(fields.map((f) => [f, new RegExp(`^${f}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim().replace(/\s+/g, ' ') ?? '(missing)']));
}

/** writableMounts lists the mount points of a /proc/PID/mountinfo, as the process sees them, that are mounted read-write, except the kernel's own (/proc, /sys, /dev). */
function writableMounts(mountinfo: string): string[] {
  return mountinfo
    .trim()
    .split('\n')
    .map((line) => line.split(' '))
    .filter(([, , , , point, options]) => options?.split(',').includes('rw') && !/^\/(proc|sys|dev)(\/|$)/.test(point ?? ''))
    .map(([, , , , point]) => point ?? '');
}

function holdsOurs(pod: PodObject | null): boolean {
  return pod?.metadata.finalizers?.includes(ARGO_FINALIZER) ?? false;
}

function seconds(since: number): string {
  return ((performance.now() - since) / 1000).toFixed(1);
}
