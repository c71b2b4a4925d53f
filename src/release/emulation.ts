// Building the arm64 image on an amd64 machine runs arm64 programs (debootstrap's second stage,
// node, npm ci, tsc) under qemu's user-mode emulation, which the kernel hands them to through
// binfmt_misc. Debian's qemu-user-static ships the interpreter and its binfmt line; registered
// with the F flag, the kernel opens the interpreter once, so that it works inside containers and
// chroots too. Here, as root, both are set up if missing; anything that cannot be is a reason.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { arch } from 'node:os';
import { promisify } from 'node:util';
import type { Arch } from '../testbed/images.ts';

const exec = promisify(execFile);
const BINFMT = '/proc/sys/fs/binfmt_misc';
const QEMU: Record<Arch, string> = { amd64: 'qemu-x86_64', arm64: 'qemu-aarch64' };

/** machineArch is this machine's architecture in Debian's words. */
export function machineArch(): Arch | null {
  return arch() === 'x64' ? 'amd64' : arch() === 'arm64' ? 'arm64' : null;
}

/** ensureEmulation makes `target`'s programs runnable here; it returns null when they are, else why not. */
export async function ensureEmulation(target: Arch): Promise<string | null> {
  if (machineArch() === target) return null;
  const name = QEMU[target];
  try {
    if (await registered(name)) return null;
    if (process.getuid?.() !== 0) return `${name} is not registered with binfmt_misc, and registering it takes root`;
    const conf = `/usr/lib/binfmt.d/${name}.conf`;
    if (!existsSync(conf)) {
      await exec('apt-get', ['update', '-qq']);
      await exec('apt-get', ['install', '-y', '-qq', 'qemu-user-static'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    }
    if (!existsSync(`${BINFMT}/register`)) await exec('mount', ['-t', 'binfmt_misc', 'binfmt_misc', BINFMT]);
    const line = (await readFile(conf, 'utf8')).split('\n').find((l) => l.startsWith(':'));
    if (line === undefined) return `${conf} holds no binfmt line`;
    await writeFile(`${BINFMT}/register`, line);
    return (await registered(name)) ? null : `${name} was written to ${BINFMT}/register but is not enabled`;
  } catch (err) {
    return `cannot set up ${name} under binfmt_misc: ${err instanceof Error ? err.message : String(err)}`;
  }
}

async function registered(name: string): Promise<boolean> {
  try {
    return (await readFile(`${BINFMT}/${name}`, 'utf8')).startsWith('enabled');
  } catch {
    return false;
  }
}
