// Scenario 10, the API budget's own cost, in this process, with no API server: 16 callers each
// awaiting schedule(job) in a loop, each job awaiting one setImmediate (a request that costs the
// limiter nothing). Side by side: no limiter at all (the harness's own cost), bottleneck 2.19.5 as
// shipped, and the budget's limiter (src/kube/budget.ts: bottleneck, its timer-clamped yields
// removed) as `auto` runs it under APF (a bound on calls in flight, no rate: calls start at once,
// the fast path), the same with the bound at half the callers (every call waits its turn in
// bottleneck), and as a QPS budget. The budget's CPU per request is its CPU per job less the
// harness's.
import Bottleneck from 'bottleneck';
import { Limiter, type Rate } from '../../src/kube/budget.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { ratePerSecond } from '../lib/stats.ts';
import { scaled, type LocalScenario } from './scenario.ts';

const CALLERS = 16;
const JOBS = 30_000;
/** bottleneck as shipped runs a few hundred jobs a second: fewer jobs keep its run short. */
const STOCK_JOBS = 2_000;
const RATED_JOBS = 3_000;
const RATE: Rate = { qps: 1_000, burst: 200 };

interface Scheduler {
  schedule(fn: () => Promise<void>): Promise<void>;
  close(): void;
}

interface Measured {
  jobs: number;
  jobsPerSecond: number | null;
  /** sustained: jobs a second after the first `burst` (a bucket's burst passes at once). */
  sustained: number | null;
  cpuMicrosPerJob: number;
}

export const budgetOverhead: LocalScenario = {
  id: 10,
  key: 'budget',
  title: 'API budget overhead',
  local: true,
  async run(ctx, out) {
    const jobs = scaled(JOBS, ctx.scale, 1_000);
    out.size = { callers: CALLERS };
    ctx.log('the harness alone');
    const bare = await measure(jobs, RATE.burst, () => ({ schedule: (fn) => fn(), close: () => {} }));
    ctx.log('bottleneck as shipped');
    const stock = await measure(scaled(STOCK_JOBS, ctx.scale, 500), RATE.burst, () => {
      const b = new Bottleneck();
      return { schedule: (fn) => b.schedule(fn), close: () => void b.disconnect() };
    });
    ctx.log('the budget, concurrency only');
    const apf = await measure(jobs, RATE.burst, () => limiter(null));
    ctx.log(`the budget, concurrency only, bound at ${CALLERS / 2}`);
    const contended = await measure(jobs, RATE.burst, () => limiter(null, CALLERS / 2));
    ctx.log(`the budget at ${RATE.qps}/s`);
    const rated = await measure(scaled(RATED_JOBS, ctx.scale, 600), RATE.burst, () => limiter(RATE));

    out.rows.push(
      row('no limiter (the harness alone)', bare, bare),
      row('bottleneck 2.19.5 as shipped, no limits', stock, bare),
      row(`budget: at most ${CALLERS} in flight, no rate (auto under APF)`, apf, bare),
      row(`budget: at most ${CALLERS / 2} in flight, no rate, ${CALLERS} callers (calls wait in bottleneck)`, contended, bare),
      row(`budget: ${RATE.qps}/s, burst ${RATE.burst} (a QPS budget)`, rated, bare),
    );
    out.goals.push(
      goal('budget with no rate: at least 5,000 jobs a second', apf.jobsPerSecond, 'jobs/s', (v) => v >= 5_000),
      goal('budget with no rate and room: its own CPU at most 20 µs a request', apf.cpuMicrosPerJob - bare.cpuMicrosPerJob, 'µs', (v) => v <= 20),
      goal(`budget at ${RATE.qps}/s: sustained rate within 5% of it`, rated.sustained, 'jobs/s', (v) => Math.abs(v / RATE.qps - 1) <= 0.05),
    );
    out.notes.push(
      `Each configuration runs ${CALLERS} callers in a fresh limiter; jobs/s run from the first job's start to the last's; the sustained rate leaves out the first ${RATE.burst} starts (a bucket's burst). CPU is this process's user + system time over the run, per job; the budget's own is that less the harness's.`,
      'The budget is the very class the controller and the sweep use (src/kube/budget.ts `Limiter`), not a copy.',
    );
  },
};

function limiter(rate: Rate | null, maxConcurrent = CALLERS): Scheduler {
  const l = new Limiter({ rate, maxConcurrent });
  return { schedule: (fn) => l.schedule(5, fn), close: () => l.close() };
}

async function measure(jobs: number, burst: number, make: () => Scheduler): Promise<Measured> {
  const s = make();
  const starts: number[] = [];
  let left = jobs;
  const job = async (): Promise<void> => {
    starts.push(performance.now());
    await new Promise((r) => setImmediate(r));
  };
  const cpu = process.cpuUsage();
  try {
    await Promise.all(Array.from({ length: CALLERS }, async () => {
      while (left > 0) {
        left--;
        await s.schedule(job);
      }
    }));
  } finally {
    s.close();
  }
  const used = process.cpuUsage(cpu);
  return {
    jobs,
    jobsPerSecond: ratePerSecond(starts),
    sustained: ratePerSecond(starts.slice(burst)),
    cpuMicrosPerJob: (used.user + used.system) / jobs,
  };
}

function row(contender: string, m: Measured, bare: Measured): Row {
  return {
    contender,
    note: `${m.jobs.toLocaleString('en-US')} jobs`,
    figures: [
      fig('jobs/s', m.jobsPerSecond),
      fig('sustained jobs/s after the burst', m.sustained),
      fig('CPU per job', m.cpuMicrosPerJob, 'µs'),
      fig('limiter CPU per job', m === bare ? null : m.cpuMicrosPerJob - bare.cpuMicrosPerJob, 'µs'),
    ],
  };
}
