// Finds (or, on Debian, builds once) the kube-apiserver, etcd and kube-controller-manager that
// the local control plane runs. Lookup order, documented in the README ("The local control plane"):
//   1. KUBEBUILDER_ASSETS (envtest's convention): kube-apiserver and etcd there; the controller
//      manager there too, or at the path in KUBE_CONTROLLER_MANAGER.
//   2. The cache folder: $FINALIZER_SWEEPER_CACHE_DIR, else $XDG_CACHE_HOME/finalizer-sweeper,
//      else ~/.cache/finalizer-sweeper; binaries in kube-v1.20.2/.
//   3. On Debian: build-control-plane.sh into the cache folder, under a lock so that parallel
//      processes wait for one build instead of starting their own.
import { execFile, spawn } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** KUBE_VERSION is the version the build script produces and the cache folder is keyed by. */
export const KUBE_VERSION = 'v1.20.2';

/** ControlPlaneBinaries are absolute paths to the three programs, and the apiserver's version. */
export interface ControlPlaneBinaries {
  apiserver: string;
  etcd: string;
  controllerManager: string;
  /** As the apiserver reports it, e.g. "v1.20.2". */
  version: string;
}

/** cacheDir is where binaries (kube-VERSION/) and Node (node/) are cached outside the repo. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FINALIZER_SWEEPER_CACHE_DIR) return env.FINALIZER_SWEEPER_CACHE_DIR;
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache');
  return join(base, 'finalizer-sweeper');
}

/** findControlPlaneBinaries locates the binaries, building them once on Debian if need be. */
export async function findControlPlaneBinaries(): Promise<ControlPlaneBinaries> {
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
  const dir = join(cacheDir(), `kube-${KUBE_VERSION}`);
  const paths = layout(dir, join(dir, 'kube-controller-manager'));
  if ((await missingPaths(paths)).length === 0) return withVersion(paths);
  if (!(await exists('/etc/debian_version'))) {
    throw new Error(
      `no control-plane binaries in ${dir}. Set KUBEBUILDER_ASSETS to a folder with kube-apiserver, etcd ` +
        'and kube-controller-manager (Kubernetes 1.20 or later; KUBE_CONTROLLER_MANAGER may name the last ' +
        'one elsewhere), or run on Debian, where they are built from Debian\'s kubernetes source package',
    );
  }
  await buildLocked(dir);
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
async function buildLocked(dest: string): Promise<void> {
  await mkdir(join(dest, '..'), { recursive: true });
  const script = join(import.meta.dirname, 'build-control-plane.sh');
  const lock = `${dest}.lock`;
  const inner = 'if [ -x "$1/kube-apiserver" ] && [ -x "$1/kube-controller-manager" ] && [ -x "$1/etcd" ]; ' +
    'then exit 0; fi; exec bash "$2" "$1"';
  process.stderr.write(`control-plane binaries missing: building them into ${dest} (waiting for ${lock})\n`);
  const child = spawn('flock', [lock, 'bash', '-c', inner, 'build', dest, script], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`build-control-plane.sh ${dest} failed (exit ${code}); its output is above`);
}
