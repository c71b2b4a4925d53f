// Finds (or builds once, from Go modules) a real helm, with which the tests render Argo's
// community chart (test/fixtures/argo-helm) with deploy/helm's values, as a user's `helm upgrade`
// does. It lives in the cache folder (binaries.ts's cacheDir) in helm-HELM_VERSION/, built with
// `go install` under a flock lock so that parallel processes wait for one build.
import { spawn } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheDir } from './binaries.ts';

/** HELM_VERSION is served by the Go module proxy and builds with the Go of these machines (/work/shared/REAL-ARGO.md). */
export const HELM_VERSION = 'v3.22.0';

/** findHelm returns the absolute path of the helm binary, building it once if need be (about 5 minutes cold on 2 cores). */
export async function findHelm(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = join(cacheDir(env), `helm-${HELM_VERSION}`);
  const helm = join(dir, 'helm');
  if (!(await executable(helm))) {
    await buildLocked(dir);
    if (!(await executable(helm))) throw new Error(`the helm build finished but ${helm} is missing`);
  }
  return helm;
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// go install writes into a folder of its own, moved into place in one rename: a waiter that gets
// the lock after a build that died sees no helm and builds again.
async function buildLocked(dest: string): Promise<void> {
  await mkdir(join(dest, '..'), { recursive: true });
  const lock = `${dest}.lock`;
  const inner = [
    'set -e',
    'if [ -x "$1/helm" ]; then exit 0; fi',
    'tmp="$1.tmp.$$"',
    'rm -rf "$tmp"',
    'GOBIN="$tmp" GOFLAGS=-mod=mod go install -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$2"',
    'rm -rf "$1"',
    'mv "$tmp" "$1"',
  ].join('\n');
  process.stderr.write(`helm ${HELM_VERSION} missing: building it into ${dest} (waiting for ${lock})\n`);
  const child = spawn('flock', [lock, 'sh', '-c', inner, 'build', dest, HELM_VERSION], { stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`building helm ${HELM_VERSION} into ${dest} failed (exit ${code}); its output is above`);
}
