// Child processes of the benchmark (the controller, the sweep, the argo-style reproduction, the
// full-object informer): each contender runs in a process of its own, so that its CPU time and
// memory can be read from /proc without the benchmark's own work mixed in. Children are stopped
// by PID, and killed if the benchmark exits first.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Child is a running Node program started by the benchmark. */
export interface Child {
  readonly name: string;
  readonly pid: number;
  /** exited resolves with the exit code (or the signal's name) once the process is gone. */
  readonly exited: Promise<number | string>;
  /** stdoutLines are the complete lines written to stdout so far. */
  readonly stdoutLines: string[];
  /** onLine hears every stdout line from now on. */
  onLine(listener: (line: string) => void): void;
  /** tail is the last output (stdout and stderr), for error messages. */
  tail(): string;
  /** cpuSeconds is user plus system CPU time so far, from /proc/PID/stat; null once gone. */
  cpuSeconds(): number | null;
  /** mainThreadCpuSeconds is the same for its main thread alone (the one V8's profiler samples); null once gone. */
  mainThreadCpuSeconds(): number | null;
  /** rssBytes is the resident set size now, from /proc/PID/status; null once gone. */
  rssBytes(): number | null;
  /** peakRssBytes is the largest resident set size so far (VmHWM); null once gone. */
  peakRssBytes(): number | null;
  /** stop sends TERM, then KILL after `graceMs`, and waits for the exit. */
  stop(graceMs?: number): Promise<number | string>;
}

const live = new Map<number, ChildProcess>();
let hooked = false;

// Linux's USER_HZ: /proc reports CPU times in these ticks; 100 on every mainstream kernel.
const TICKS_PER_SECOND = 100;
const TAIL_CHARS = 4000;

/** PROFILED: the children BENCH_PROFILE_DIR profiles: the controllers and the bare loop in a process of its own. */
const PROFILED = new Set(['controller', 'ceiling']);

/**
 * profiling: with BENCH_PROFILE_DIR set, controllers and the bare loop run under V8's CPU profiler
 * and write a .cpuprofile there when they exit (Node refuses --cpu-prof in NODE_OPTIONS), named
 * with their PID; BENCH_PROFILE_INTERVAL_US sets the sampling interval (V8's default: 1,000 µs).
 */
function profiling(name: string, env: NodeJS.ProcessEnv): string[] {
  const dir = env['BENCH_PROFILE_DIR'];
  if (!dir || !PROFILED.has(name)) return [];
  const interval = env['BENCH_PROFILE_INTERVAL_US'];
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(interval ? [`--cpu-prof-interval=${interval}`] : [])];
}

/**
 * nodeFlags: BENCH_NODE_FLAGS, split at spaces, are given to the node of the controllers and of the
 * bare loop in a process of its own (e.g. --trace-gc, whose lines BENCH_LOG_DIR keeps), for V8's
 * flags that NODE_OPTIONS refuses.
 */
function nodeFlags(name: string, env: NodeJS.ProcessEnv): string[] {
  const flags = env['BENCH_NODE_FLAGS']?.trim();
  return flags && PROFILED.has(name) ? flags.split(/\s+/) : [];
}

/**
 * logging: with BENCH_LOG_DIR set, each child's whole output (stdout and stderr) is kept there as
 * NAME-PID.log, so that a slow pod can be traced through the controller's log after the run.
 */
function logFile(name: string, pid: number, env: NodeJS.ProcessEnv): ((chunk: Buffer) => void) | null {
  const dir = env['BENCH_LOG_DIR'];
  if (!dir) return null;
  const file = createWriteStream(join(dir, `${name}-${pid}.log`));
  return (chunk) => file.write(chunk);
}

/** startNode runs `node script args…` with the benchmark's own Node binary. */
export function startNode(name: string, script: string, args: string[], env: NodeJS.ProcessEnv = process.env): Child {
  hookExit();
  const child = spawn(process.execPath, [...profiling(name, env), ...nodeFlags(name, env), script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  if (child.pid === undefined) throw new Error(`cannot start ${name}`);
  const pid = child.pid;
  live.set(pid, child);
  const keep = logFile(name, pid, env);
  const stdoutLines: string[] = [];
  const listeners: ((line: string) => void)[] = [];
  let tail = '';
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    keep?.(chunk);
    const text = chunk.toString('utf8');
    tail = (tail + text).slice(-TAIL_CHARS);
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      stdoutLines.push(line);
      for (const l of listeners) l(line);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    keep?.(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', (err) => resolve(`error: ${err.message}`));
    child.once('exit', (code, signal) => {
      live.delete(pid);
      resolve(signal ?? code ?? 'unknown');
    });
  });
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    name,
    pid,
    exited,
    stdoutLines,
    onLine: (l) => listeners.push(l),
    tail: () => tail,
    cpuSeconds: () => (gone ? null : cpuSecondsOf(pid)),
    mainThreadCpuSeconds: () => (gone ? null : cpuSecondsOf(pid, pid)),
    rssBytes: () => (gone ? null : statusKiB(pid, 'VmRSS')),
    peakRssBytes: () => (gone ? null : statusKiB(pid, 'VmHWM')),
    stop: async (graceMs = 10_000) => {
      if (gone) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * cpuSecondsOf reads utime + stime of a process (fields 14 and 15 of /proc/PID/stat), or of one of
 * its threads (/proc/PID/task/TID/stat; a process's main thread has TID = PID).
 */
export function cpuSecondsOf(pid: number, tid?: number): number | null {
  try {
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** rssOf is the resident set size of any process (the API server's too), from /proc/PID/status; null once gone. */
export function rssOf(pid: number): number | null {
  return statusKiB(pid, 'VmRSS');
}

/** peakRssOf is the largest resident set size of any process so far (VmHWM); null once gone. */
export function peakRssOf(pid: number): number | null {
  return statusKiB(pid, 'VmHWM');
}

/** statusKiB reads a field given in kB from /proc/PID/status, in bytes. */
function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

// A benchmark interrupted half-way must not leave controllers running against a dead API server.
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  const killAll = (): void => {
    for (const child of live.values()) child.kill('SIGKILL');
  };
  process.once('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      killAll();
      // exit() runs the exit hooks, the control plane's among them.
      process.exit(130);
    });
  }
}
