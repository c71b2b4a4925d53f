// Helpers to run the controller against the shared control plane: in-process (to read its metrics
// and log records directly) or as the real CLI in a child process (to stop it with SIGTERM and
// start it again). Each is scoped to the test's namespaces, so tests never act on each other's pods.
import type { ChildProcess } from 'node:child_process';
import { DEFAULTS, type Settings } from '../../src/config/settings.ts';
import { Controller } from '../../src/controller/controller.ts';
import { connect } from '../../src/commands/connect.ts';
import { Metrics } from '../../src/metrics/metrics.ts';
import { recordingLogger, type LogRecord } from '../../src/log.ts';
import { startEvents } from '../../src/events/start.ts';
import { logLines, startCli } from './cli.ts';

/** RunningController is an in-process controller that leads alone (no leader election). */
export interface RunningController {
  controller: Controller;
  metrics: Metrics;
  /** records are its log lines, debug included, in the order they were logged. */
  records: LogRecord[];
  /** stop shuts it down as SIGTERM would and waits until every loop has ended. */
  stop(): Promise<void>;
}

/**
 * startController connects through the same code as the command (one client, one API budget),
 * then runs the caches and leads at once. It does not wait for the caches to sync: see waitSynced.
 * With `events`, it writes Kubernetes Events as the command does (--events), else none.
 */
export async function startController(kubeconfig: string, settings: Partial<Settings> & { namespaces: string[] }, o: { events?: boolean } = {}): Promise<RunningController> {
  const s: Settings = { ...DEFAULTS, leaderElect: false, metricsBindAddress: '0', healthProbeBindAddress: '0', ...settings, kubeconfig };
  const { logger, records } = recordingLogger();
  const metrics = new Metrics({ version: 'test' });
  const connection = await connect(s, metrics, logger);
  if (typeof connection === 'number') throw new Error(`cannot connect (exit code ${connection}): ${JSON.stringify(records)}`);
  const { client } = connection;
  const events = o.events === true ? startEvents({ settings: s, client, metrics, logger, command: 'controller' }) : null;
  const controller = new Controller({ settings: s, client, metrics, logger, ...(events !== null ? { events: events.removals } : {}) });
  if (events !== null && controller.namespaces !== null) events.skipNamespaces(controller.namespaces);
  const stop = new AbortController();
  const abort = new AbortController();
  const running = Promise.all([controller.runCaches(stop.signal), controller.lead(stop.signal, abort.signal)]);
  let stopped: Promise<void> | null = null;
  return {
    controller,
    metrics,
    records,
    stop: () =>
      (stopped ??= (async () => {
        stop.abort(new Error('test over'));
        const timer = setTimeout(() => abort.abort(new Error('shutdown timeout')), 10_000);
        try {
          await running;
          await events?.close(5_000);
        } finally {
          clearTimeout(timer);
          client.close();
        }
      })()),
  };
}

/** Removal is one "finalizer removed" log line: the pod's key ("namespace/name") and why. */
export interface Removal {
  pod: string;
  reason: string;
  /** evidence is what proved it (src/decide/decide.ts, Evidence): owner, namespace, pod-label, workflow-label, node-status, clock. */
  evidence: string;
  level: LogRecord['level'];
  /** time is when it was logged, in ms since the epoch (after the patch succeeded). */
  time: number;
}

/** removals lists the removals logged so far, in order; `stale` ones are logged as warnings. */
export function removals(records: readonly LogRecord[]): Removal[] {
  return records
    .filter((r) => r.msg.startsWith('finalizer removed') && typeof r.pod === 'string')
    .map((r) => ({ pod: r.pod as string, reason: String(r.reason), evidence: String(r.evidence), level: r.level, time: Date.parse(String(r.time)) }));
}

/** resyncs counts the resync passes logged so far. */
export function resyncs(records: readonly LogRecord[]): number {
  return records.filter((r) => r.msg === 'resync').length;
}

/** metricValue reads one series of the controller's metrics, e.g. `conflicts_total` or `pods_waiting{reason="unattributable"}`. */
export async function metricValue(metrics: Metrics, series: string): Promise<number | undefined> {
  const name = `finalizer_sweeper_${series}`;
  const line = (await metrics.registry.metrics()).split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** CliController is `finalizer-sweeper controller` running in a child process (see cli.ts). */
export interface CliController {
  child: ChildProcess;
  /** records are its JSON log lines from stderr so far, parsed, in order. */
  readonly records: LogRecord[];
  /** stderr is everything else it wrote there (anything that is not a JSON log line). */
  readonly stderr: string[];
  /** terminate sends SIGTERM (if still running) and resolves with the exit code (or the signal's name). */
  terminate(): Promise<number | string>;
}

/**
 * spawnController starts the CLI with leader election and servers off, logging JSON at debug level;
 * it is killed after timeoutMs. `env` replaces this process's environment (e.g. NODE_OPTIONS).
 */
export function spawnController(kubeconfig: string, args: string[], timeoutMs = 180_000, env?: NodeJS.ProcessEnv): CliController {
  const run = startCli(
    ['controller', '--kubeconfig', kubeconfig, '--leader-elect=false', '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--log-format', 'json', '--log-level', 'debug', ...args],
    { timeoutMs, ...(env !== undefined ? { env } : {}) },
  );
  const exited = run.result.then((r) => r.code ?? r.signal ?? 'unknown');
  return {
    child: run.child,
    get records() {
      return logLines(run.stderr()) as LogRecord[];
    },
    get stderr() {
      return run.stderr().split('\n').filter((l) => l !== '' && !l.startsWith('{'));
    },
    terminate: () => {
      if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGTERM');
      return exited;
    },
  };
}
