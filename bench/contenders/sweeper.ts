// finalizer-sweeper as the benchmark runs it: the compiled CLI that ships (`node dist/cli.js`,
// built first if dist/ is missing or stale), in a process of its own, exactly as a user starts it;
// the controller also with the environment its Deployment sets.
// Its API requests and queue adds are read from its own /metrics endpoint; its CPU time and RSS
// from /proc.
import { DEFAULTS as SETTINGS } from '../../src/config/settings.ts';
import { freePort } from '../../src/testbed/control-plane-files.ts';
import { compiledCli } from '../lib/build.ts';
import { deploymentEnv } from '../lib/deployment-env.ts';
import { startNode, type Child } from '../lib/child.ts';
import { scrape, type Scrape } from '../lib/prom.ts';

/** Config is one way of running it: defaults, or the flags of a tuning. */
export interface Config {
  label: string;
  flags: string[];
}

export const DEFAULTS: Config = { label: 'finalizer-sweeper (defaults)', flags: [] };

/**
 * TUNED is what an operator tunes for throughput: 16 workers, the concurrency at which the ceiling
 * levels off, and warn-level logs, which drop the info line per removal. No QPS: the budget's
 * default (`auto`) already lifts the client-side cap under API Priority and Fairness, and a QPS
 * given is always enforced, through bottleneck's token bucket, which costs CPU on every call
 * (BENCHMARKS.md, scenario 1: 0.65 to 0.70 CPU-s per 1,000 removals with --kube-api-qps 5000).
 */
export const TUNED: Config = {
  label: 'finalizer-sweeper (tuned)',
  flags: ['--pod-cleanup-workers', '16', '--log-level', 'warn'],
};

/** workersOf is the worker count a config runs with (the ceiling runs at the same concurrency). */
export function workersOf(c: Config): number {
  const i = c.flags.indexOf('--pod-cleanup-workers');
  return i >= 0 ? Number(c.flags[i + 1]) : SETTINGS.podCleanupWorkers;
}

/** RunningController is a started controller process. */
export interface RunningController {
  child: Child;
  metrics(): Promise<Scrape>;
  /** waitReady waits for /readyz (caches synced, watches healthy). */
  waitReady(timeoutMs: number): Promise<void>;
  /** ready answers whether /readyz says 200 now. */
  ready(): Promise<boolean>;
  stop(): Promise<void>;
}

export interface ControllerOptions {
  kubeconfig: string;
  /** context: the kubeconfig context to run as (e.g. SWEEPER); default its current one, the admin. */
  context?: string;
  namespace: string;
  config: Config;
  extraFlags?: string[];
  /** deploymentEnv: the Deployment's literal environment is set (true, the default), or not: the CLI as a user starts it by hand. */
  deploymentEnv?: boolean;
  /** leaderElection: run with --leader-elect on this Lease (default: without leader election). */
  leaderElection?: { namespace: string; id: string };
  /** cli: another checkout's compiled CLI (bench/flame.ts compares commits); default this one's, built if stale. */
  cli?: string;
}

/**
 * startController starts `finalizer-sweeper controller` for one namespace, without leader
 * election unless asked, with the environment the Deployment gives its container (see deployment-env.ts).
 */
export async function startController(o: ControllerOptions): Promise<RunningController> {
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const child = startNode('controller', o.cli ?? compiledCli(), [
    'controller',
    '--kubeconfig', o.kubeconfig,
    ...(o.context === undefined ? [] : ['--context', o.context]),
    '--namespace', o.namespace,
    ...(o.leaderElection === undefined
      ? ['--leader-elect=false']
      : ['--leader-elect', '--leader-election-namespace', o.leaderElection.namespace, '--leader-election-id', o.leaderElection.id]),
    '--metrics-bind-address', `127.0.0.1:${metricsPort}`,
    '--health-probe-bind-address', `127.0.0.1:${healthPort}`,
    ...o.config.flags,
    ...(o.extraFlags ?? []),
  ], { ...process.env, ...(o.deploymentEnv === false ? {} : deploymentEnv()) });
  const ready = async (): Promise<boolean> => {
    try {
      const res = await fetch(`http://127.0.0.1:${healthPort}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      return res.status === 200;
    } catch {
      return false;
    }
  };
  return {
    child,
    metrics: () => scrape(`http://127.0.0.1:${metricsPort}/metrics`),
    ready,
    waitReady: async (timeoutMs) => {
      let exited: number | string | null = null;
      void child.exited.then((how) => (exited = how));
      const deadline = performance.now() + timeoutMs;
      while (!(await ready())) {
        if (exited !== null) throw new Error(`the controller exited (${exited}) before it was ready:\n${child.tail()}`);
        if (performance.now() > deadline) throw new Error(`the controller was not ready after ${timeoutMs} ms:\n${child.tail()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    stop: async () => {
      await child.stop();
    },
  };
}

/** apiRequests sums finalizer_sweeper_api_requests_total, optionally for one verb. */
export function apiRequests(s: Scrape, verb?: string): number {
  return s.sum('finalizer_sweeper_api_requests_total', verb === undefined ? {} : { verb });
}

/** queueAdds is client-go's workqueue_adds_total of the cleanup queue. */
export function queueAdds(s: Scrape): number {
  return s.sum('workqueue_adds_total');
}

/** eventWrites counts the Event writes (created, or a series counted on) in a scrape. */
export function eventWrites(s: Scrape): number {
  return s.sum('finalizer_sweeper_events_total', { result: 'created' }) + s.sum('finalizer_sweeper_events_total', { result: 'updated' });
}

/**
 * afterEvents scrapes once the Event writes have stopped: no change for 3 s (the recorder writes a
 * series 2 s after its last occurrence), 30 s at most.
 */
export async function afterEvents(metrics: () => Promise<Scrape>): Promise<Scrape> {
  let last = await metrics();
  for (let quietSince = Date.now(), deadline = Date.now() + 30_000; Date.now() - quietSince < 3_000 && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const next = await metrics();
    if (eventWrites(next) !== eventWrites(last)) quietSince = Date.now();
    last = next;
  }
  return last;
}

export interface SweepRun {
  exitCode: number | string;
  /** report is the parsed `--output json` report, or null if stdout held none. */
  report: unknown;
  seconds: number;
  cpuSeconds: number | null;
  tail: string;
}

/** runSweep runs `finalizer-sweeper sweep` over one namespace and waits for it to exit. */
export async function runSweep(o: { kubeconfig: string; namespace: string; config: Config; timeoutMs: number }): Promise<SweepRun> {
  const started = performance.now();
  const child = startNode('sweep', compiledCli(), ['sweep', '--kubeconfig', o.kubeconfig, '--namespace', o.namespace, '--output', 'json', ...o.config.flags]);
  // The process's CPU time can only be read while it lives: sample it until it exits.
  let cpuSeconds: number | null = null;
  const sampler = setInterval(() => (cpuSeconds = child.cpuSeconds() ?? cpuSeconds), 50);
  const timer = setTimeout(() => void child.stop(), o.timeoutMs);
  try {
    const exitCode = await child.exited;
    let report: unknown = null;
    try {
      report = JSON.parse(child.stdoutLines.join('\n'));
    } catch {
      report = null;
    }
    return { exitCode, report, seconds: (performance.now() - started) / 1000, cpuSeconds, tail: child.tail() };
  } finally {
    clearInterval(sampler);
    clearTimeout(timer);
  }
}
