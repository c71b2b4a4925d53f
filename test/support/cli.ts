// Running `finalizer-sweeper` as operators do: `node src/cli.ts ...` (or an installed copy) in a
// child process, with its stdout, stderr and exit status collected, and its JSON log lines parsed.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const REPO = join(import.meta.dirname, '..', '..');
const CLI = join(REPO, 'src', 'cli.ts');
/** A child that runs longer than this is killed, so that a hang fails the test instead of stalling it. */
const DEFAULT_TIMEOUT_MS = 90_000;

/** CliResult is how a finished run ended and what it printed. */
export interface CliResult {
  /** The exit code, or null when a signal ended the process. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** RunningCli is a started child; `result` settles when it exits. */
export interface RunningCli {
  child: ChildProcess;
  result: Promise<CliResult>;
  /** stderr so far. */
  stderr(): string;
  /** untilStderr resolves once a stderr line satisfies the predicate (rejects if the child exits first). */
  untilStderr(matches: (line: string) => boolean): Promise<string>;
}

/** CliOptions say how to run the CLI; by default `node src/cli.ts` in the repo with this process's environment. */
export interface CliOptions {
  timeoutMs?: number;
  /** command is the program and its first arguments, e.g. an installed `bin/finalizer-sweeper`. */
  command?: [string, ...string[]];
  /** env replaces this process's environment (FINALIZER_SWEEPER_* variables are dropped from either). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** startCli starts the CLI (`node src/cli.ts` unless `o.command` names another) with args. Settings come from the arguments only: no FINALIZER_SWEEPER_* variable is passed on. */
export function startCli(args: string[], o: CliOptions = {}): RunningCli {
  const env = Object.fromEntries(Object.entries(o.env ?? process.env).filter(([k]) => !k.startsWith('FINALIZER_SWEEPER_')));
  const [command, ...first] = o.command ?? [process.execPath, CLI];
  const child = spawn(command, [...first, ...args], {
    cwd: o.cwd ?? REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    killSignal: 'SIGKILL',
  });
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ matches: (line: string) => boolean; resolve: (line: string) => void }> = [];
  let partial = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
    const lines = (partial + s).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      for (const w of waiters.filter((w) => w.matches(line))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const result = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  const untilStderr = (matches: (line: string) => boolean): Promise<string> =>
    new Promise((resolve, reject) => {
      const seen = stderr.split('\n').find(matches);
      if (seen !== undefined) return resolve(seen);
      waiters.push({ matches, resolve });
      void result.then((r) => reject(new Error(`the process exited (code ${r.code}, signal ${r.signal}) before the line appeared; stderr:\n${r.stderr}`)));
    });
  return { child, result, stderr: () => stderr, untilStderr };
}

/** runCli runs the CLI with args to the end (see startCli). */
export function runCli(args: string[], o: CliOptions = {}): Promise<CliResult> {
  return startCli(args, o).result;
}

/** LogLine is one JSON log line (the default --log-format). */
export interface LogLine {
  level: string;
  msg: string;
  pod?: string;
  reason?: string;
  [field: string]: unknown;
}

/** logLines parses the JSON log lines of an output, skipping anything else (progress lines). */
export function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** podsLogged lists, sorted, the `pod` field of the log lines with this message. */
export function podsLogged(output: string, msg: string): string[] {
  return logLines(output)
    .filter((l) => l.msg === msg)
    .map((l) => l.pod ?? '')
    .sort();
}
