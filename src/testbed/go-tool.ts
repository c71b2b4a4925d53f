// Finds (or builds once, from Go modules) a Go program the tests or the release need: helm, syft.
// Each lives in the cache folder (binaries.ts's cacheDir) in NAME-VERSION/, built with
// `go install` under a flock lock so that parallel processes wait for one build.
import { spawn } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheDir } from './binaries.ts';

/** GoTool names a program: its binary's name, the package that `go install` builds, and the module version. */
export interface GoTool {
  name: string;
  pkg: string;
  version: string;
}

/** findGoTool returns the absolute path of the tool's binary, building it once if need be. */
export async function findGoTool(tool: GoTool, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = join(cacheDir(env), `${tool.name}-${tool.version}`);
  const binary = join(dir, tool.name);
  if (!(await executable(binary))) {
    await buildLocked(tool, dir);
    if (!(await executable(binary))) throw new Error(`the ${tool.name} build finished but ${binary} is missing`);
  }
  return binary;
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
// the lock after a build that died sees no binary and builds again.
async function buildLocked(tool: GoTool, dest: string): Promise<void> {
  await mkdir(join(dest, '..'), { recursive: true });
  const lock = `${dest}.lock`;
  const inner = [
    'set -e',
    'if [ -x "$1/$2" ]; then exit 0; fi',
    'tmp="$1.tmp.$$"',
    'rm -rf "$tmp"',
    'GOBIN="$tmp" GOFLAGS=-mod=mod go install -ldflags "-s -w" "$3@$4"',
    'rm -rf "$1"',
    'mv "$tmp" "$1"',
  ].join('\n');
  process.stderr.write(`${tool.name} ${tool.version} missing: building it into ${dest} (waiting for ${lock})\n`);
  const child = spawn('flock', [lock, 'sh', '-c', inner, 'build', dest, tool.name, tool.pkg, tool.version], { stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`building ${tool.name} ${tool.version} into ${dest} failed (exit ${code}); its output is above`);
}
