// npm run bench:flame -- --scenario 1|16 [--scale F] [--out DIR] [--controller LABEL=CLI]… [--no-loop]
// npm run bench:flame -- --analyse DIR [--analyse DIR2]… [--runs LABEL,LABEL…] [--out DIR]
//
// Flame graphs side by side (issue 46): the controller at its defaults and the bare patch loop
// (contenders/ceiling-main.ts, a process of its own) on the same objects, each under V8's CPU
// profiler, cut to the window in which it removes, and compared per removal. Scenario 1's shape:
// Workflows of 100 pods deleted, the loop at the controller's worker count on one namespace, then
// each controller on a fresh namespace of the same objects, from the deletion to the last removal.
// Scenario 16's: the backlog (finished pods over 20 namespaces, owners deleted, PodGC), the loop on
// one pod in ten, then the controller from a cold start over the rest, its start and sync counted.
//
// --controller LABEL=CLI (repeatable) runs another checkout's compiled CLI (dist/cli.js), e.g. an
// older commit's, on the same objects (scenario 1 only); the default is this checkout's.
// Every run writes, under DIR (default a new folder under the system's temporary directory):
// LABEL.cpuprofile, LABEL.folded (one stack a line with its samples: flamegraph.pl, inferno and
// speedscope read it), LABEL.svg, LABEL.run.json, and table.md, the per-removal comparison.
// --analyse DIR re-reads runs already made (several folders: their runs side by side, those of one
// label pooled, as repeats on shared cores should be); --runs picks labels and their order.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runCeilingProcess } from './contenders/ceiling-process.ts';
import { DEFAULTS, startController, workersOf } from './contenders/sweeper.ts';
import { compiledCli } from './lib/build.ts';
import { APF_PLANE, startEnv, SWEEPER } from './lib/env.ts';
import { analyseRun, poolByLabel, renderTable, type FlameRun } from './lib/flame-report.ts';
import { withOrphans } from './lib/orphan-set.ts';
import { createPodSet, deleteWorkflows, type PodSet } from './lib/populate.ts';
import { RemovalWatch } from './lib/removal-watch.ts';
import { ratePerSecond } from './lib/stats.ts';
import { CEILING_SELECTOR, PLANE as BACKLOG_PLANE, SHARE_LABEL, waitPinned } from './scenarios/backlog.ts';
import { scaled, type ScenarioContext } from './scenarios/scenario.ts';

const USAGE = `usage: npm run bench:flame -- --scenario 1|16 [--scale F] [--out DIR] [--controller LABEL=CLI]… [--no-loop]
       npm run bench:flame -- --analyse DIR [--analyse DIR]… [--runs LABEL,LABEL…] [--out DIR]`;
const S1_WORKFLOWS = 50;
const S16_PODS = 200_000;
const S16_NAMESPACES = 20;
const S16_PODS_PER_WORKFLOW = 10;
const READY_TIMEOUT_MS = 300_000;

/** nowUs is the monotonic clock in µs, the clock of a .cpuprofile's startTime (V8's and libuv's both read CLOCK_MONOTONIC). */
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);
/** usOfPerfMs turns a performance.now() reading (the removal watch's) into the same clock. */
const perfOffsetUs = nowUs() - performance.now() * 1000;
const usOfPerfMs = (ms: number): number => Math.round(perfOffsetUs + ms * 1000);

interface Controller {
  label: string;
  cli: string;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string' },
      scale: { type: 'string', default: '1' },
      out: { type: 'string' },
      controller: { type: 'string', multiple: true },
      'no-loop': { type: 'boolean', default: false },
      analyse: { type: 'string', multiple: true },
      runs: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return usage(null);
  if (values.analyse !== undefined) {
    const found = values.analyse.flatMap((dir) => readRuns(resolve(dir)));
    // --runs A,B: only these labels, in this order (the difference is A less B).
    const wanted = values.runs?.split(',').map((l) => l.trim());
    const runs = wanted === undefined ? controllersFirst(found) : wanted.flatMap((l) => found.filter((r) => r.run.label === l));
    if (runs.length === 0) return usage(`no runs${wanted === undefined ? '' : ` labelled ${wanted.join(', ')}`} in ${values.analyse.join(', ')}`);
    const out = values.out === undefined ? resolve(values.analyse[0]!) : resolve(values.out);
    console.log(report(runs, out));
    return 0;
  }
  const scenario = values.scenario;
  if (scenario !== '1' && scenario !== '16') return usage(`--scenario must be 1 or 16, got "${scenario}"`);
  const scale = Number(values.scale);
  if (!(scale > 0 && scale <= 1)) return usage(`--scale must be a number in (0, 1], got "${values.scale}"`);
  const controllers: Controller[] = [];
  for (const given of values.controller ?? []) {
    const at = given.indexOf('=');
    if (at <= 0) return usage(`--controller takes LABEL=CLI, got "${given}"`);
    controllers.push({ label: given.slice(0, at), cli: resolve(given.slice(at + 1)) });
  }
  if (controllers.length === 0) controllers.push({ label: 'controller', cli: compiledCli((m) => console.error(`flame: ${m}`)) });
  if (scenario === '16' && controllers.length > 1) return usage('scenario 16 drains its backlog once: give one --controller at most');
  if (new Set(controllers.map((c) => c.label)).size < controllers.length || controllers.some((c) => c.label === 'loop' || !/^[\w.-]+$/.test(c.label))) {
    return usage('controller labels must be distinct words (letters, digits, . - _), and not "loop"');
  }
  const out = values.out === undefined ? mkdtempSync(join(tmpdir(), `flame-s${scenario}-`)) : resolve(values.out);
  mkdirSync(out, { recursive: true });
  // Every profiled child writes its .cpuprofile here, its output (--trace-gc's lines among it) beside.
  const raw = join(out, 'raw');
  mkdirSync(raw, { recursive: true });
  process.env['BENCH_PROFILE_DIR'] = raw;
  process.env['BENCH_LOG_DIR'] = raw;
  process.env['BENCH_NODE_FLAGS'] = `${process.env['BENCH_NODE_FLAGS'] ?? ''} --trace-gc`.trim();

  const started = performance.now();
  const log = (message: string): void => console.error(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] flame ${scenario}: ${message}`);
  const env = await startEnv(scenario === '1' ? APF_PLANE : BACKLOG_PLANE);
  const runs: FlameRun[] = [];
  try {
    const ctx: ScenarioContext = { env, scale, log };
    const measured = scenario === '1' ? await scenario1(ctx, controllers, !values['no-loop']) : await scenario16(ctx, controllers[0]!, !values['no-loop']);
    for (const m of measured) {
      const run: FlameRun = { ...m, scenario: Number(scenario), scale, profile: `${m.label}.cpuprofile`, log: `${m.label}.log` };
      renameSync(findByPid(raw, m.pid, '.cpuprofile'), join(out, run.profile));
      renameSync(findByPid(raw, m.pid, '.log'), join(out, run.log));
      writeFileSync(join(out, `${m.label}.run.json`), `${JSON.stringify(run, null, 2)}\n`);
      runs.push(run);
    }
  } finally {
    await env.stop();
  }
  console.log(report(controllersFirst(runs.map((r) => ({ run: r, dir: out }))), out));
  console.error(`flame: written to ${out}`);
  return 0;
}

/** Measured is what a run measured, before its files are moved into place. */
type Measured = Omit<FlameRun, 'scenario' | 'scale' | 'profile' | 'log'>;

/** scenario1: the loop, then each controller, each on a fresh namespace of the same Workflows. */
async function scenario1(ctx: ScenarioContext, controllers: Controller[], loop: boolean): Promise<Measured[]> {
  const workflows = scaled(S1_WORKFLOWS, ctx.scale, 2);
  const concurrency = workersOf(DEFAULTS);
  const measured: Measured[] = [];
  if (loop) {
    measured.push(await withOrphans(ctx, 'flame-loop', workflows, 'the bare loop', async (set, watch) => {
      await deleteWorkflows(ctx.env.cluster, set.workflows);
      const r = await runCeilingProcess(ctx.env.plane, { context: SWEEPER, concurrency, namespace: set.namespace });
      await watch.waitFor(set.podNames, 60_000, 'the bare loop');
      return {
        label: 'loop',
        kind: 'loop' as const,
        pid: r.pid,
        removals: r.removed,
        window: { fromUs: r.startedUs, toUs: r.endedUs, what: 'from its first request to its last answer' },
        cpuSeconds: r.cpuSeconds,
        mainThreadCpuSeconds: r.mainThreadCpuSeconds,
        rate: ratePerSecond(watch.timesOf(set.podNames)),
        note: `concurrency ${concurrency}, ${set.podNames.length} pods of ${workflows} Workflows`,
      };
    }));
  }
  for (const c of controllers) {
    measured.push(await withOrphans(ctx, `flame-${c.label}`, workflows, c.label, async (set, watch) => {
      const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: SWEEPER, namespace: set.namespace, config: DEFAULTS, cli: c.cli });
      try {
        await controller.waitReady(READY_TIMEOUT_MS);
        const [cpu0, main0, fromUs] = [controller.child.cpuSeconds(), controller.child.mainThreadCpuSeconds(), nowUs()];
        await deleteWorkflows(ctx.env.cluster, set.workflows);
        await watch.waitFor(set.podNames, 30_000 + set.podNames.length * 20, c.label);
        const [cpu1, main1] = [controller.child.cpuSeconds(), controller.child.mainThreadCpuSeconds()];
        const times = watch.timesOf(set.podNames);
        return {
          label: c.label,
          kind: 'controller' as const,
          pid: controller.child.pid,
          removals: set.podNames.length,
          window: { fromUs, toUs: usOfPerfMs(Math.max(...times)), what: 'from the Workflows\' deletion to the last removal seen' },
          cpuSeconds: difference(cpu1, cpu0),
          mainThreadCpuSeconds: difference(main1, main0),
          rate: ratePerSecond(times),
          note: `defaults, ${c.cli}`,
        };
      } finally {
        await controller.stop();
      }
    }));
  }
  return measured;
}

/** scenario16: scenario 16's backlog; the loop on one pod in ten first, then the controller, cold, on the rest. */
async function scenario16(ctx: ScenarioContext, c: Controller, loop: boolean): Promise<Measured[]> {
  const total = scaled(S16_PODS, ctx.scale, S16_NAMESPACES * S16_PODS_PER_WORKFLOW);
  const busy = Math.max(1, Math.round((total * 0.75) / S16_PODS_PER_WORKFLOW));
  const small = Math.max(1, Math.round((total - busy * S16_PODS_PER_WORKFLOW) / (S16_NAMESPACES - 1) / S16_PODS_PER_WORKFLOW));
  const namespaces = Array.from({ length: S16_NAMESPACES }, (_, i) => `flame-t${i}`);
  ctx.log(`creating ${busy * S16_PODS_PER_WORKFLOW} pods in ${namespaces[0]} and ${small * S16_PODS_PER_WORKFLOW} in each of ${S16_NAMESPACES - 1} others`);
  const sets: PodSet[] = [];
  for (const [i, namespace] of namespaces.entries()) {
    sets.push(await createPodSet(ctx.env.cluster, {
      namespace,
      workflows: i === 0 ? busy : small,
      podsPerWorkflow: S16_PODS_PER_WORKFLOW,
      prefix: `t${i}`,
      finished: true,
      podLabels: (j) => ({ [SHARE_LABEL]: j === 0 ? 'ceiling' : 'controller' }),
    }));
  }
  const watches = await Promise.all(sets.map(async (s) => {
    const w = new RemovalWatch(ctx.env.pods, s.namespace);
    await w.start();
    w.track(s.podNames);
    return w;
  }));
  const measured: Measured[] = [];
  try {
    const all = sets.flatMap((s) => s.podNames);
    ctx.log('deleting every owner; waiting until the garbage collector and PodGC have marked every pod');
    await deleteWorkflows(ctx.env.cluster, sets.flatMap((s) => s.workflows));
    await waitPinned(ctx, namespaces, all.length);
    const timesOf = (pick: (name: string) => boolean): number[] => sets.flatMap((s, i) => watches[i]!.timesOf(s.podNames.filter(pick)));
    const waitAll = (pick: (name: string) => boolean, timeoutMs: number): Promise<void[]> => Promise.all(sets.map((s, i) => watches[i]!.waitFor(s.podNames.filter(pick), timeoutMs)));
    const forLoop = (name: string): boolean => name.endsWith('-p0');
    const forController = (name: string): boolean => !forLoop(name);
    const concurrency = workersOf(DEFAULTS);
    if (loop) {
      ctx.log(`the bare loop on ${all.filter(forLoop).length} pods, concurrency ${concurrency}`);
      const r = await runCeilingProcess(ctx.env.plane, { context: SWEEPER, concurrency, labelSelector: CEILING_SELECTOR });
      await waitAll(forLoop, 60_000);
      measured.push({
        label: 'loop',
        kind: 'loop',
        pid: r.pid,
        removals: r.removed,
        window: { fromUs: r.startedUs, toUs: r.endedUs, what: 'from its first request (its list) to its last answer' },
        cpuSeconds: r.cpuSeconds,
        mainThreadCpuSeconds: r.mainThreadCpuSeconds,
        rate: ratePerSecond(timesOf(forLoop)),
        note: `concurrency ${concurrency}, one pod in ${S16_PODS_PER_WORKFLOW} of ${all.length}`,
      });
    }
    const toFree = all.filter(forController).length;
    ctx.log(`${c.label}, cold, over ${namespaces.length} namespaces: ${toFree} pods to free`);
    const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: SWEEPER, namespace: namespaces.join(','), config: DEFAULTS, cli: c.cli });
    try {
      await waitAll(forController, 300_000 + toFree * 50);
      const [cpu, main] = [controller.child.cpuSeconds(), controller.child.mainThreadCpuSeconds()];
      const times = timesOf(forController);
      measured.push({
        label: c.label,
        kind: 'controller',
        pid: controller.child.pid,
        removals: toFree,
        // From the process's start: its start, list and sync are part of what a backlog costs it.
        window: { fromUs: 0, toUs: usOfPerfMs(Math.max(...times)), what: 'from its start (list and sync included) to the last removal seen' },
        cpuSeconds: cpu,
        mainThreadCpuSeconds: main,
        rate: ratePerSecond(times),
        note: `defaults, cold start, ${c.cli}`,
      });
    } finally {
      await controller.stop();
    }
  } finally {
    for (const w of watches) await w.stop();
  }
  return measured;
}

function difference(after: number | null, before: number | null): number | null {
  return after === null || before === null ? null : after - before;
}

/**
 * findByPid finds the file a child wrote, named with its PID: V8's CPU.DATE.TIME.PID.THREAD.N.cpuprofile
 * of its main thread (thread 0; pino's worker writes one of its own), child.ts's NAME-PID.log. The
 * controller re-executes itself under the same PID to set V8's flags (src/commands/runtime-tuning.ts),
 * and its first image writes a profile too, of its start alone: the last written is the controller's.
 */
function findByPid(dir: string, pid: number, ext: string): string {
  const names = readdirSync(dir).filter((f) => f.endsWith(ext) && (f.includes(`.${pid}.0.`) || f.endsWith(`-${pid}${ext}`)));
  const name = names.sort((a, b) => statSync(join(dir, a)).mtimeMs - statSync(join(dir, b)).mtimeMs).at(-1);
  if (name === undefined) throw new Error(`no ${ext} of PID ${pid} in ${dir}`);
  return join(dir, name);
}

function readRuns(dir: string): Array<{ run: FlameRun; dir: string }> {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.run.json'))
    .map((f) => ({ run: JSON.parse(readFileSync(join(dir, f), 'utf8')) as FlameRun, dir }));
}

/** controllersFirst: the controllers in the order given, the loop last, so that "difference" is a controller less the loop. */
function controllersFirst<T extends { run: FlameRun }>(runs: T[]): T[] {
  return [...runs].sort((a, b) => Number(a.run.kind === 'loop') - Number(b.run.kind === 'loop'));
}

/** report writes each run's folded stacks and SVG beside it, and the table of them all to `out`; returns the table. */
function report(runs: Array<{ run: FlameRun; dir: string }>, out: string): string {
  mkdirSync(out, { recursive: true });
  const table = renderTable(poolByLabel(runs.map(({ run, dir }) => analyseRun(run, dir))));
  writeFileSync(join(out, 'table.md'), `${table}\n`);
  return table;
}

function usage(problem: string | null): number {
  if (problem === null) {
    console.log(USAGE);
    return 0;
  }
  console.error(`flame: ${problem}\n${USAGE}`);
  return 2;
}

process.exitCode = await main();
