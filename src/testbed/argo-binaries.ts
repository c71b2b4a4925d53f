// Finds (or builds once, from Go modules) what the real-Argo bed runs beside the control plane:
// Argo's workflow-controller, kwok, and Argo's minimal CRDs from the same module. They live in the
// cache folder (binaries.ts's cacheDir) in argo-ARGO_VERSION-kwok-KWOK_VERSION/, built by
// build-argo-bed.sh under a flock lock so that parallel processes wait for one build.
import { spawn } from 'node:child_process';
import { access, constants, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheDir } from './binaries.ts';

/**
 * ARGO_VERSION is the workflow-controller the bed runs: the only v4 release the Go module proxy
 * serves on the project's machines (v4.1.x is refused there).
 */
export const ARGO_VERSION = 'v4.0.5';
/** KWOK_VERSION is the kwok that plays the kubelet of the bed's fake node. */
export const KWOK_VERSION = 'v0.8.0';

/** ArgoBedBinaries are absolute paths to the two programs and the folder of Argo's CRDs. */
export interface ArgoBedBinaries {
  workflowController: string;
  kwok: string;
  /** Argo's manifests/base/crds/minimal/argoproj.io_*.yaml, as the module ships them. */
  crdDir: string;
}

/** argoBedDir is the cache folder of this pair of versions. */
export function argoBedDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), `argo-${ARGO_VERSION}-kwok-${KWOK_VERSION}`);
}

/** findArgoBedBinaries locates the programs and CRDs, building them once if need be. */
export async function findArgoBedBinaries(): Promise<ArgoBedBinaries> {
  const dir = argoBedDir();
  const bins = { workflowController: join(dir, 'workflow-controller'), kwok: join(dir, 'kwok'), crdDir: join(dir, 'crds') };
  if (!(await complete(bins))) {
    await buildLocked(dir);
    if (!(await complete(bins))) throw new Error(`build-argo-bed.sh finished but ${dir} is incomplete`);
  }
  return bins;
}

async function complete(b: ArgoBedBinaries): Promise<boolean> {
  try {
    await access(b.workflowController, constants.X_OK);
    await access(b.kwok, constants.X_OK);
    return (await readdir(b.crdDir)).some((f) => f.endsWith('.yaml'));
  } catch {
    return false;
  }
}

// As binaries.ts's build: flock releases the lock when its holder dies, and the script publishes
// the folder atomically, so a waiter that gets the lock sees all or nothing.
async function buildLocked(dest: string): Promise<void> {
  await mkdir(join(dest, '..'), { recursive: true });
  const script = join(import.meta.dirname, 'build-argo-bed.sh');
  const lock = `${dest}.lock`;
  const inner = 'if [ -x "$3/workflow-controller" ] && [ -x "$3/kwok" ] && [ -d "$3/crds" ]; then exit 0; fi; exec bash "$4" "$1" "$2" "$3"';
  process.stderr.write(`Argo ${ARGO_VERSION} and kwok ${KWOK_VERSION} missing: building them into ${dest} (waiting for ${lock})\n`);
  const child = spawn('flock', [lock, 'bash', '-c', inner, 'build', ARGO_VERSION, KWOK_VERSION, dest, script], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`build-argo-bed.sh ${ARGO_VERSION} ${KWOK_VERSION} ${dest} failed (exit ${code}); its output is above`);
}
