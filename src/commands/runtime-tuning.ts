// The controller runs with two settings that only a process's start can give it, so a controller
// started by hand (from npm or a checkout) replaces its process image once to get them, as the
// image gets them from its ENTRYPOINT and ENV:
//
// - glibc's MALLOC_MMAP_THRESHOLD_. glibc serves a large allocation from its heap once an earlier
//   one of that size has been freed (its mmap threshold rises to the largest block freed), and
//   keeps freed heap memory instead of returning it: a controller that read big answers holds that
//   memory for good. At 64 KiB, larger blocks are mapped on their own and unmapped when freed
//   (BENCHMARKS.md, scenario 5). glibc reads the variable only when a process starts.
// - V8's --max-semi-space-size, the cap on its young generation. Under steady churn V8 doubles
//   the young generation step by step (its two semi-spaces from 8 to 16 to 32 MB) and gives it
//   back only after a full, memory-reducing collection, which a busy controller does not get
//   by itself: the leader's RSS climbed and fell by 60 MB every few minutes in the soak
//   (`git show 95e957c:BENCHMARKS.md`, "Soak (scenario 11)"). Capped at 8 MB it stays at the size the leader reaches in its
//   first minute. V8 sizes its heap once, so the flag cannot be set from inside the process.
//
// process.execve keeps the PID, the arguments and stdin, stdout and stderr (nothing else is open
// yet).

import { accessSync, constants } from 'node:fs';

/** MMAP_THRESHOLD is the value the image and the Deployment set (deploy/Dockerfile, deploy/*). */
export const MMAP_THRESHOLD = '65536';

/** SEMI_SPACE_FLAG is the young generation's cap the image's ENTRYPOINT gives node (deploy/Dockerfile). */
export const SEMI_SPACE_FLAG = '--max-semi-space-size=8';

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
 * needsSemiSpaceCap answers whether node was started without a cap on the young generation,
 * neither on its command line nor in NODE_OPTIONS (V8 spells its flags with - or _), so that an
 * operator's own choice stands.
 */
export function needsSemiSpaceCap(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  const names = (arg: string) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(arg);
  return !execArgv.some(names) && !(nodeOptions ?? '').split(/\s+/).some(names);
}

/**
 * restartTuned restarts the process image with what needsMallocEnv and needsSemiSpaceCap say is
 * missing; it returns only when nothing is missing, the runtime has no execve, or the node binary
 * cannot be executed. Node aborts the process when execve fails, so what can be checked is
 * checked first: memory is worth a restart, not a crash. Call it before anything is started:
 * nothing of this process image survives it.
 */
export function restartTuned(): void {
  const env = needsMallocEnv(process.env, process.platform) ? { ...process.env, MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD } : null;
  const flags = needsSemiSpaceCap(process.execArgv, process.env['NODE_OPTIONS']) ? [SEMI_SPACE_FLAG] : [];
  if ((env === null && flags.length === 0) || process.execve === undefined) return;
  try {
    accessSync(process.execPath, constants.X_OK);
  } catch {
    return;
  }
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...flags, ...process.argv.slice(1)], env ?? process.env);
}
