// bench/flame.ts's analysis: each run's profile cut to its window, folded and drawn, and the runs
// compared per removal, category by category and function by function. A category's CPU per
// removal is its share of the main thread's busy samples times the main thread's CPU time in the
// window (from /proc or process.threadCpuUsage), over the removals: the profiler's samples give the
// shares, the kernel's counters the time, so that a sampler slowed by shared cores skews neither.
// The collector is split by --trace-gc's pauses; the threads beside the main one (V8's helpers,
// libuv's pool, pino's worker) are one row, the process's CPU less the main thread's.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BLOCKED, categorise } from '../profile-shares.ts';
import { byCategory, count, fold, selfTimes, type CpuProfile } from './cpuprofile.ts';
import { flameSvg } from './flame-svg.ts';

/** FlameRun: one profiled run, as bench/flame.ts writes it (LABEL.run.json). */
export interface FlameRun {
  label: string;
  kind: 'controller' | 'loop';
  pid: number;
  removals: number;
  /** window: on the monotonic clock in µs; fromUs 0 is the process's start. */
  window: { fromUs: number; toUs: number; what: string };
  /** cpuSeconds: the process's CPU in the window (all threads); mainThreadCpuSeconds: its main thread's. */
  cpuSeconds: number | null;
  mainThreadCpuSeconds: number | null;
  rate: number | null;
  note: string;
  scenario: number;
  scale: number;
  /** profile and log: file names, beside the run's JSON. */
  profile: string;
  log: string;
}

/** GcPauses: --trace-gc's main-thread pauses in the window, ms by kind, and incremental marking's steps. */
export type GcPauses = Record<string, number>;

/** Summary: what the table compares, for one run. */
export interface Summary {
  run: FlameRun;
  busy: number;
  idle: number;
  /** intervalUs: the sampling interval, the median of V8's time deltas. */
  intervalUs: number;
  /** pooled: how many runs pool() merged into this one (busy is then µs of CPU), absent for one. */
  pooled?: number;
  /** blockedUs: the time sampled in BLOCKED (samples times the interval), left out of busy and categories. */
  blockedUs: number;
  categories: Map<string, number>;
  self: Map<string, number>;
  gc: GcPauses;
}

/** parseGcTrace sums --trace-gc's lines (ms since the isolate began) that fall in [fromMs, toMs]. */
export function parseGcTrace(text: string, fromMs: number, toMs: number): GcPauses {
  const out: GcPauses = {};
  const re = /^\[\d+:0x[0-9a-f]+\]\s+(\d+) ms: (Scavenge|Minor Mark-Sweep|Mark-Compact)[^,]*,(?: pooled: [\d.]+ MB,)? ([\d.]+) \/ [\d.]+ ms(?:\s+\(\+ ([\d.]+) ms in \d+ steps)?/gm;
  for (const m of text.matchAll(re)) {
    const at = Number(m[1]);
    if (at < fromMs || at > toMs) continue;
    out[m[2]!] = (out[m[2]!] ?? 0) + Number(m[3]);
    if (m[4] !== undefined) out['incremental marking steps'] = (out['incremental marking steps'] ?? 0) + Number(m[4]);
  }
  return out;
}

/** analyseRun reads a run's profile and log from `dir`, and writes LABEL.folded and LABEL.svg beside them. */
export function analyseRun(run: FlameRun, dir: string): Summary {
  const profile = JSON.parse(readFileSync(join(dir, run.profile), 'utf8')) as CpuProfile;
  const start = profile.startTime ?? 0;
  const window = { fromUs: run.window.fromUs === 0 ? start : run.window.fromUs, toUs: run.window.toUs };
  const counted = count(profile, window);
  const folded = fold(profile, counted);
  writeFileSync(join(dir, `${run.label}.folded`), `${folded.join('\n')}\n`);
  writeFileSync(join(dir, `${run.label}.svg`), flameSvg(folded, { title: `${run.label}: scenario ${run.scenario} at scale ${run.scale}, ${run.removals.toLocaleString('en-US')} removals, ${run.window.what}` }));
  let log = '';
  try {
    log = readFileSync(join(dir, run.log), 'utf8');
  } catch {
    log = '';
  }
  // --trace-gc counts ms from the isolate's start, which the profile's start follows within a few ms.
  const gc = parseGcTrace(log, (window.fromUs - start) / 1000, (window.toUs - start) / 1000);
  const deltas = [...profile.timeDeltas].sort((a, b) => a - b);
  const intervalUs = deltas[Math.floor(deltas.length / 2)] ?? 0;
  const categories = byCategory(profile, counted, categorise);
  // A thread asleep in Atomics.wait is sampled but spends no CPU: its samples are no share of the CPU.
  const blocked = categories.get(BLOCKED) ?? 0;
  categories.delete(BLOCKED);
  const self = selfTimes(profile, counted);
  for (const k of [...self.keys()]) if (/atomic-sleep\/|^Atomics\.wait/.test(k)) self.delete(k);
  return { run, busy: counted.busy - blocked, idle: counted.idle, intervalUs, blockedUs: blocked * intervalUs, categories, self, gc };
}

/**
 * pool merges runs of one label (repeats, on shared cores) into one: each run's samples are first
 * turned into µs of its main thread's CPU (its share times that CPU), then summed, with the
 * removals and CPU times, so that a figure per removal weighs every removal alike. Its busy and
 * interval are those µs and 1, so that usPerRemoval and the sampled-to-CPU ratio still read it.
 */
export function pool(runs: readonly Summary[]): Summary {
  const first = runs[0];
  if (first === undefined) throw new Error('nothing to pool');
  if (runs.length === 1) return first;
  const cpuUs = (s: Summary): number => (s.run.mainThreadCpuSeconds ?? 0) * 1e6;
  const weigh = (pick: (s: Summary) => Map<string, number>): Map<string, number> => {
    const out = new Map<string, number>();
    for (const s of runs) for (const [k, n] of pick(s)) out.set(k, (out.get(k) ?? 0) + (s.busy === 0 ? 0 : (n / s.busy) * cpuUs(s)));
    return out;
  };
  const sum = (f: (s: Summary) => number | null): number | null => (runs.some((s) => f(s) === null) ? null : runs.reduce((a, s) => a + f(s)!, 0));
  const gc: GcPauses = {};
  for (const s of runs) for (const [k, ms] of Object.entries(s.gc)) gc[k] = (gc[k] ?? 0) + ms;
  const rates = runs.map((s) => s.run.rate).filter((r) => r !== null);
  const sampled = runs.reduce((a, s) => a + s.busy * s.intervalUs, 0);
  const cpu = sum((s) => s.run.mainThreadCpuSeconds);
  return {
    run: {
      ...first.run,
      label: `${first.run.label} (${runs.length} runs)`,
      removals: sum((s) => s.run.removals)!,
      cpuSeconds: sum((s) => s.run.cpuSeconds),
      mainThreadCpuSeconds: cpu,
      rate: rates.length === 0 ? null : rates.reduce((a, b) => a + b, 0) / rates.length,
      note: `${first.run.note}; removals a second: the mean of ${rates.map((r) => r.toFixed(0)).join(', ')}`,
    },
    // Busy "samples" are now µs of CPU, one µs each: the sampled time is kept in the interval.
    busy: cpu === null ? 0 : cpu * 1e6,
    idle: 0,
    intervalUs: cpu === null || cpu === 0 ? 0 : sampled / (cpu * 1e6),
    categories: weigh((s) => s.categories),
    self: weigh((s) => s.self),
    gc,
    pooled: runs.length,
    blockedUs: runs.reduce((a, s) => a + s.blockedUs, 0),
  };
}

/** poolByLabel pools the runs that share a label, in the order each label first comes. */
export function poolByLabel(runs: readonly Summary[]): Summary[] {
  const groups = new Map<string, Summary[]>();
  for (const s of runs) groups.set(s.run.label, [...(groups.get(s.run.label) ?? []), s]);
  return [...groups.values()].map(pool);
}

/** usPerRemoval: `samples` of a run's busy ones, as CPU µs per removal of its main thread. */
export function usPerRemoval(s: Summary, samples: number): number | null {
  const cpu = s.run.mainThreadCpuSeconds;
  if (cpu === null || s.busy === 0 || s.run.removals === 0) return null;
  return ((samples / s.busy) * cpu * 1e6) / s.run.removals;
}

const TOP_FUNCTIONS = 25;
const COLLECTOR = 'the collector';

/** collectorShare: the collector's µs per removal, times kind `k`'s share of the pauses --trace-gc logged in the window. */
export function collectorShare(s: Summary, k: string): number | null {
  const total = Object.values(s.gc).reduce((a, b) => a + b, 0);
  const all = usPerRemoval(s, s.categories.get(COLLECTOR) ?? 0);
  return total === 0 || all === null ? null : (all * (s.gc[k] ?? 0)) / total;
}

/**
 * renderTable: the runs side by side, CPU µs per removal; with two runs or more, the first less
 * the second ("difference"), rows sorted by it. Then the collector's pauses, and the functions
 * whose self time differs most.
 */
export function renderTable(summaries: readonly Summary[]): string {
  const heads = summaries.map((s) => s.run.label);
  const diff = summaries.length >= 2;
  const head = `| CPU µs per removal | ${heads.join(' | ')} |${diff ? ` ${heads[0]} − ${heads[1]} |` : ''}\n| --- |${' ---: |'.repeat(heads.length + (diff ? 1 : 0))}`;
  const row = (name: string, values: ReadonlyArray<number | null>, digits = 0): string => {
    const cells = values.map((v) => (v === null ? '–' : v.toFixed(digits)));
    const d = diff && values[0] !== null && values[1] !== null ? ` ${signed(values[0]! - values[1]!, digits)} |` : diff ? ' – |' : '';
    return `| ${name} | ${cells.join(' | ')} |${d}`;
  };
  const per = (s: Summary, seconds: number | null): number | null => (seconds === null ? null : (seconds * 1e6) / s.run.removals);
  const lines = [
    ...summaries.map((s) => `- ${s.run.label}: ${s.run.removals.toLocaleString('en-US')} removals at ${s.run.rate === null ? '–' : s.run.rate.toFixed(0)}/s, ${s.run.note}; window ${s.run.window.what}, ${s.pooled === undefined ? `${s.busy.toLocaleString('en-US')} busy samples (${s.idle.toLocaleString('en-US')} idle) every ${s.intervalUs} µs` : `pooled`}${sampledToCpu(s)}.`),
    '',
    head,
    row('removals a second', summaries.map((s) => s.run.rate)),
    row('**the process (all threads, /proc)**', summaries.map((s) => per(s, s.run.cpuSeconds))),
    row('threads beside the main one (V8\'s helpers, libuv\'s pool, pino\'s worker)', summaries.map((s) => (s.run.cpuSeconds === null || s.run.mainThreadCpuSeconds === null ? null : per(s, s.run.cpuSeconds - s.run.mainThreadCpuSeconds)))),
    row('**the main thread**, split below by its samples', summaries.map((s) => per(s, s.run.mainThreadCpuSeconds))),
  ];
  if (summaries.some((s) => s.blockedUs > 0)) lines.splice(lines.length - 1, 0, row(`${BLOCKED}: sampled µs, no CPU, not in the rows below`, summaries.map((s) => s.blockedUs / s.run.removals)));
  const names = new Set(summaries.flatMap((s) => [...s.categories.keys()]));
  const byName = (name: string): Array<number | null> => summaries.map((s) => usPerRemoval(s, s.categories.get(name) ?? 0));
  const kinds = [...new Set(summaries.flatMap((s) => Object.keys(s.gc)))].sort();
  for (const name of sortByDifference([...names], byName)) {
    lines.push(row(`  ${name}`, byName(name)));
    // The pauses' times are wall time (inflated on shared cores): they split the samples, no more.
    if (name === COLLECTOR) for (const k of kinds) lines.push(row(`    of which ${k} (its share of --trace-gc's pauses)`, summaries.map((s) => collectorShare(s, k))));
  }
  const fns = new Set(summaries.flatMap((s) => [...s.self.keys()]));
  const byFn = (name: string): Array<number | null> => summaries.map((s) => usPerRemoval(s, s.self.get(name) ?? 0));
  const top = sortByDifference([...fns], byFn, diff).slice(0, TOP_FUNCTIONS);
  lines.push('', `| self time, µs per removal (top ${TOP_FUNCTIONS}${diff ? ' by difference' : ''}) | ${heads.join(' | ')} |${diff ? ' difference |' : ''}\n| --- |${' ---: |'.repeat(heads.length + (diff ? 1 : 0))}`);
  for (const f of top) lines.push(row(`\`${f.replaceAll('|', '\\|')}\``, byFn(f), 1));
  return lines.join('\n');
}

/**
 * sampledToCpu: the busy samples' time (samples × interval) over the main thread's CPU. A thread
 * blocked in a system call (a write to a full pipe) is sampled in it though it spends no CPU, and
 * the sampler misses ticks while cores are short: well above 1, a category that blocks is
 * overstated and the others understated; below 1, ticks were missed, which skews no share.
 */
function sampledToCpu(s: Summary): string {
  const cpu = s.run.mainThreadCpuSeconds;
  if (cpu === null || cpu === 0) return '';
  return `, sampled busy time ${((s.busy * s.intervalUs) / 1e6 / cpu).toFixed(2)} × the main thread's CPU`;
}

/** sortByDifference: the first run less the second, largest first (by the first run's alone, or when there is one run). */
function sortByDifference(names: string[], values: (name: string) => Array<number | null>, byDifference = true): string[] {
  const key = (n: string): number => {
    const [a, b] = values(n);
    return byDifference && b !== undefined ? (a ?? 0) - (b ?? 0) : (a ?? 0);
  };
  return names.sort((x, y) => key(y) - key(x) || (x < y ? -1 : 1));
}

function signed(v: number, digits: number): string {
  const s = v.toFixed(digits);
  return v > 0 && s !== (0).toFixed(digits) ? `+${s}` : s;
}
