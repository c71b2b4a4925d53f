// Finds (or builds once, from Go modules) the kube-apiserver, etcd and kube-controller-manager that
// the local control plane runs. Lookup order, documented in docs/testing.md:
//   1. KUBEBUILDER_ASSETS (envtest's convention): kube-apiserver and etcd there; the controller
//      manager there too, or at the path in KUBE_CONTROLLER_MANAGER. Whatever version they are.
//   2. The cache folder: $FINALIZER_SWEEPER_CACHE_DIR, else $XDG_CACHE_HOME/finalizer-sweeper,
//      else ~/.cache/finalizer-sweeper; binaries in kube-VERSION/.
//   3. build-control-plane.sh into the cache folder, with the machine's `go` and its module proxy,
//      under a lock so that parallel processes wait for one build instead of starting their own.
import { execFile, spawn } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * KUBE_VERSIONS are the releases the project claims and tests, newest first: the newest served
 * minor (the default for tests, demo and benchmarks), 1.33 (WatchList off: a request carrying
 * sendInitialEvents is answered 422), and the oldest minor the README claims.
 */
export const KUBE_VERSIONS = ['v1.37.2', 'v1.33.13', 'v1.31.14'] as const;

/** KUBE_VERSION_ENV picks one of KUBE_VERSIONS (or its minor, "1.31") for the local control plane. */
export const KUBE_VERSION_ENV = 'FINALIZER_SWEEPER_KUBE_VERSION';

/** ControlPlaneBinaries are absolute paths to the three programs, and the apiserver's version. */
export interface ControlPlaneBinaries {
  apiserver: string;
  etcd: string;
  controllerManager: string;
  /** As the apiserver reports it, e.g. "v1.37.2". */
  version: string;
}

/** cacheDir is where binaries (kube-VERSION/) and Node (node-MAJOR/) are cached outside the repo. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FINALIZER_SWEEPER_CACHE_DIR) return env.FINALIZER_SWEEPER_CACHE_DIR;
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache');
  return join(base, 'finalizer-sweeper');
}

/**
 * kubeVersion resolves what KUBE_VERSION_ENV asks for ("v1.31.14", "1.31.14", "1.31", "v1.31")
 * to one of KUBE_VERSIONS; unset or empty, the newest. Anything else is an error that lists them.
 */
export function kubeVersion(env: NodeJS.ProcessEnv = process.env): string {
  const asked = env[KUBE_VERSION_ENV]?.trim();
  if (!asked) return KUBE_VERSIONS[0];
  const want = asked.startsWith('v') ? asked : `v${asked}`;
  const found = KUBE_VERSIONS.find((v) => v === want || v.startsWith(`${want}.`));
  if (found === undefined) {
    throw new Error(`${KUBE_VERSION_ENV}=${asked} is not a release the test bed builds; choose one of ${KUBE_VERSIONS.join(', ')} (or its minor, e.g. 1.31)`);
  }
  return found;
}

/** findControlPlaneBinaries locates the binaries of a version, building them once if need be. */
export async function findControlPlaneBinaries(version = kubeVersion()): Promise<ControlPlaneBinaries> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets) {
    const kcm = process.env.KUBE_CONTROLLER_MANAGER || join(assets, 'kube-controller-manager');
    const paths = layout(assets, kcm);
    const missing = await missingPaths(paths);
    if (missing.length > 0) {
      throw new Error(
        `KUBEBUILDER_ASSETS=${assets} lacks ${missing.join(', ')}: it must hold kube-apiserver and etcd, ` +
          'and kube-controller-manager unless KUBE_CONTROLLER_MANAGER names that binary',
      );
    }
    return withVersion(paths);
  }
  const dir = join(cacheDir(), `kube-${version}`);
  const paths = layout(dir, join(dir, 'kube-controller-manager'));
  if ((await missingPaths(paths)).length === 0) return withVersion(paths);
  await buildLocked(version, dir);
  const missing = await missingPaths(paths);
  if (missing.length > 0) throw new Error(`build-control-plane.sh finished but ${missing.join(', ')} is missing`);
  return withVersion(paths);
}

function layout(dir: string, controllerManager: string): Omit<ControlPlaneBinaries, 'version'> {
  return { apiserver: join(dir, 'kube-apiserver'), etcd: join(dir, 'etcd'), controllerManager };
}

async function missingPaths(paths: Omit<ControlPlaneBinaries, 'version'>): Promise<string[]> {
  const all = [paths.apiserver, paths.etcd, paths.controllerManager];
  const present = await Promise.all(all.map((p) => exists(p, constants.X_OK)));
  return all.filter((_, i) => !present[i]);
}

async function exists(path: string, mode = constants.F_OK): Promise<boolean> {
  try {
    await access(path, mode);
    return true;
  } catch {
    return false;
  }
}

async function withVersion(paths: Omit<ControlPlaneBinaries, 'version'>): Promise<ControlPlaneBinaries> {
  const { stdout } = await run(paths.apiserver, ['--version']);
  const version = /v\d+\.\d+\.\d+\S*/.exec(stdout)?.[0];
  if (!version) throw new Error(`cannot read the version from "${paths.apiserver} --version": ${stdout}`);
  return { ...paths, version };
}

// flock releases the lock when its holder dies, so an interrupted build never wedges later runs;
// the script publishes the folder atomically, so a waiter that gets the lock sees all or nothing.
async function buildLocked(version: string, dest: string): Promise<void> {
  await mkdir(join(dest, '..'), { recursive: true });
  const script = join(import.meta.dirname, 'build-control-plane.sh');
  const lock = `${dest}.lock`;
  const inner = 'if [ -x "$2/kube-apiserver" ] && [ -x "$2/kube-controller-manager" ] && [ -x "$2/etcd" ]; ' +
    'then exit 0; fi; exec bash "$3" "$1" "$2"';
  process.stderr.write(`control-plane binaries ${version} missing: building them into ${dest} (waiting for ${lock})\n`);
  const child = spawn('flock', [lock, 'bash', '-c', inner, 'build', version, dest, script], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`build-control-plane.sh ${version} ${dest} failed (exit ${code}); its output is above`);
}
