// Child processes of the local control plane: started with their output in a log file, stopped
// by PID (TERM, then KILL), and never outliving the Node process that started them, whether it
// exits, is interrupted, or is killed outright (a watchdog shell reaps them then).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';

/** Managed is one running program of the control plane. */
export interface Managed {
  name: string;
  pid: number;
  logPath: string;
  /** exited resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<string>;
  /** onLine adds a listener for each output line; used to wait for readiness messages. */
  onLine(listener: (line: string) => void): void;
}

const live = new Map<number, ChildProcess>();
const tempDirs = new Set<string>();
let hooked = false;

/**
 * startProcess spawns a program whose stdout and stderr go to logPath (and to log, if given), with
 * this process's environment plus env.
 */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  logPath: string,
  log?: (line: string) => void,
  env: Record<string, string> = {},
): Managed {
  hookExit();
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  if (child.pid === undefined) {
    child.once('error', () => {}); // Reported by the throw below.
    throw new Error(`cannot start ${name} (${command})`);
  }
  const pid = child.pid;
  live.set(pid, child);
  // A forgotten stop() must not keep a test process alive: the exit hook kills what is left.
  child.unref();
  (child.stdout as Socket).unref();
  (child.stderr as Socket).unref();
  const file = createWriteStream(logPath);
  const listeners: ((line: string) => void)[] = [];
  if (log) listeners.push((line) => log(`${name}: ${line}`));
  let partial = '';
  const onData = (chunk: Buffer): void => {
    file.write(chunk);
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) for (const l of listeners) l(line);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  child.once('exit', () => live.delete(pid));
  // 'close' comes after the last output, so the log file is never written after its end.
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`error: ${err.message}`));
    child.once('close', (code, signal) => resolve(signal ?? String(code)));
  }).then(async (how) => {
    await new Promise<void>((resolve) => file.end(resolve));
    return how;
  });
  return { name, pid, logPath, exited, onLine: (l) => listeners.push(l) };
}

/** stopProcess sends TERM, then KILL after graceMs; resolves once the process has exited. */
export async function stopProcess(p: Managed, graceMs = 10_000): Promise<void> {
  if (!live.has(p.pid)) return void (await p.exited);
  signal(p.pid, 'SIGTERM');
  const timer = setTimeout(() => signal(p.pid, 'SIGKILL'), graceMs);
  await p.exited;
  clearTimeout(timer);
}

/** tailOf returns the last lines of a log file, for error messages. */
export async function tailOf(path: string, lines = 25): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** removeOnExit registers a temp dir to delete if the process exits before stop() does it. */
export function removeOnExit(dir: string, remove: boolean): void {
  if (remove) tempDirs.add(dir);
  else tempDirs.delete(dir);
}

/**
 * startWatchdog starts a shell that kills pids once this Node process is gone: the exit and
 * signal hooks below cannot run when Node itself is killed with SIGKILL or runs out of memory.
 */
export function startWatchdog(pids: number[], dirs: string[]): number {
  const script = `
    while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done
    kill -TERM ${pids.join(' ')} 2>/dev/null; sleep 5; kill -KILL ${pids.join(' ')} 2>/dev/null
    rm -rf ${dirs.map((d) => `'${d}'`).join(' ')}`;
  const dog = spawn('sh', ['-c', script], { stdio: 'ignore' });
  const pid = dog.pid;
  dog.once('error', () => {}); // Reported by the throw below.
  if (pid === undefined) throw new Error('cannot start the control-plane watchdog (sh)');
  dog.unref();
  live.set(pid, dog);
  dog.once('exit', () => live.delete(pid));
  return pid;
}

/** stopWatchdog ends a watchdog once the processes it guards are stopped. */
export function stopWatchdog(pid: number): void {
  signal(pid, 'SIGKILL');
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

// Exit handlers must be synchronous: KILL is the only stop that needs no waiting.
function killAllNow(): void {
  for (const pid of live.keys()) signal(pid, 'SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAllNow();
      // Re-raise for the default action only if nobody else (such as node --test) handles it.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}
