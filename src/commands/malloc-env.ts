// glibc serves a large allocation from its heap once an earlier one of that size has been freed
// (its mmap threshold rises to the largest block freed), and keeps freed heap memory instead of
// returning it: a controller that read big answers holds that memory for good. The image and the
// Deployment set MALLOC_MMAP_THRESHOLD_ so that blocks of 64 KiB and more are mapped on their own
// and unmapped when freed (BENCHMARKS.md, scenario 5). A controller started by hand, from npm or
// a checkout, gets the same by replacing its process image once, with the variable set:
// process.execve keeps the PID, the arguments and stdin, stdout and stderr (nothing else is open
// yet), and glibc reads the variable only when a process starts, so nothing short of that sets it.

import { accessSync, constants } from 'node:fs';

/** MMAP_THRESHOLD is the value the image and the Deployment set (deploy/Dockerfile, deploy/*). */
export const MMAP_THRESHOLD = '65536';

/**
 * needsMallocEnv answers whether the process should restart itself with MALLOC_MMAP_THRESHOLD_:
 * on Linux only (the variable is glibc's; musl ignores it, harmlessly), and only when neither it
 * nor a glibc tunable for the same threshold was given, so that an operator's own choice stands.
 */
export function needsMallocEnv(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): boolean {
  if (platform !== 'linux') return false;
  if (env['MALLOC_MMAP_THRESHOLD_'] !== undefined) return false;
  return !(env['GLIBC_TUNABLES'] ?? '').includes('glibc.malloc.mmap_threshold');
}

/**
 * withMallocEnv restarts the process image with MALLOC_MMAP_THRESHOLD_ set when needsMallocEnv
 * says so; it returns only when nothing is to be done, the runtime has no execve, or the node
 * binary cannot be executed. Node aborts the process when execve fails, so what can be checked
 * is checked first: memory is worth a restart, not a crash. Call it before anything is started:
 * nothing of this process image survives it.
 */
export function withMallocEnv(): void {
  if (!needsMallocEnv(process.env, process.platform) || process.execve === undefined) return;
  try {
    accessSync(process.execPath, constants.X_OK);
  } catch {
    return;
  }
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD });
}
