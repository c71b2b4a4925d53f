// Scenario 14, the event loop while large stored statuses are decoded, in this process, with no
// API server: 50 running Workflows whose nodes Argo stored compressed (about 1 MiB of gzip each,
// the most a Workflow under etcd's 1.5 MiB request limit holds), as their GETs would answer.
// Side by side in one run: the synchronous decoding src/argo did until issue 34 (gunzipSync, then
// JSON.parse of the whole map: kept here only as the comparison), with the 50 answers handled in
// one turn of the loop (answers that arrive together are handled in one poll phase) and one per
// turn; and storedNodes as the controller and the sweep run it. Measured: the event loop's delay
// (perf_hooks.monitorEventLoopDelay) and the longest gap between two ticks of a 100 ms timer, the
// kind that paces Lease renewals, against the renew deadline (10 s by default): a leader whose
// loop is held longer than that stops leading.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setImmediate as loopTurn } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { DEFAULTS } from '../../src/config/settings.ts';
import { fnv1a32, nodeState, storedNodes, type NodeState } from '../../src/argo/node-status.ts';
import { MAX_NODES_BYTES } from '../../src/argo/compressed-nodes.ts';
import { workflowStatus, type ArgoNode } from '../../src/testbed/argo-status.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { scaled, type LocalScenario } from './scenario.ts';

const WORKFLOWS = 50;
/** Argo compresses past 1 MiB; etcd takes at most 1.5 MiB: about 1 MiB of gzip is the largest that fits. */
const COMPRESSED_BYTES = 1024 * 1024;
const TICK_MS = 100;
const IDLE_MS = 10_000;
/** monitorEventLoopDelay's resolution: a stall is recorded once its timer fires after it. */
const RESOLUTION_MS = 10;

interface Measured {
  seconds: number;
  maxDelayMs: number;
  p99DelayMs: number;
  longestTickGapMs: number;
  /** The most main-thread CPU between two ticks of a 1 ms timer: the loop held by our work, whatever the machine's load. */
  longestHoldMs: number;
  cpuSeconds: number;
  nodes: number;
}

export const decodeStall: LocalScenario = {
  id: 14,
  key: 'decode',
  title: 'The event loop while large stored statuses are decoded',
  local: true,
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, 5);
    ctx.log(`building ${workflows} statuses of about ${COMPRESSED_BYTES / 1024 / 1024} MiB of gzip`);
    const perWorkflow = nodesFor(COMPRESSED_BYTES);
    const statuses = Array.from({ length: workflows }, (_, w) => workflowStatus(podNodes(`wf-${w}`, perWorkflow), 'gzip'));
    const base64 = statuses.map((s) => String(s['compressedNodes']));
    const inflated = gunzipSync(Buffer.from(base64[0]!, 'base64')).length;
    out.size = { workflows, nodesPerWorkflow: perWorkflow };

    ctx.log(`the loop idle for ${IDLE_MS / 1000} s: the machine's own noise`);
    const idle = await measure(async () => {
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      return 0;
    });
    ctx.log('synchronous decoding, the answers in one turn of the loop');
    const together = await measure(async () => sum(await Promise.all(base64.map(async (b) => syncDecode(b).size))));
    ctx.log('synchronous decoding, one answer per turn of the loop');
    const apart = await measure(async () => {
      let n = 0;
      for (const b of base64) {
        await loopTurn();
        n += syncDecode(b).size;
      }
      return n;
    });
    ctx.log('storedNodes as shipped, the answers at once');
    const shipped = await measure(async () => sum(await Promise.all(statuses.map(async (s) => {
      const stored = await storedNodes(s);
      return stored.form === 'compressed' ? stored.nodes.size : 0;
    }))));
    if (new Set([together.nodes, apart.nodes, shipped.nodes]).size !== 1) throw new Error(`the decodings disagree: ${together.nodes}, ${apart.nodes}, ${shipped.nodes} nodes`);

    out.rows.push(
      row(`no decoding: the loop idle for ${IDLE_MS / 1000} s (the machine's own noise)`, idle),
      row('synchronous decoding (until issue 34), the answers in one turn of the loop', together),
      row('synchronous decoding (until issue 34), one answer per turn', apart),
      row('storedNodes as shipped (async zlib, JSON read in slices, one Workflow at a time)', shipped),
    );
    const deadline = DEFAULTS.renewDeadlineMs;
    out.goals.push(
      goal(`storedNodes: the longest gap of a ${TICK_MS} ms timer under a tenth of the renew deadline (${deadline / 1000} s)`, shipped.longestTickGapMs, 'ms', (v) => v < deadline / 10),
      goal('storedNodes: the event loop\'s longest delay under a tenth of the renew deadline', shipped.maxDelayMs, 'ms', (v) => v < deadline / 10),
      goal('storedNodes: the main thread holds the loop at most 100 ms at a time', shipped.longestHoldMs, 'ms', (v) => v <= 100),
      goal('storedNodes: its CPU at most 1.5 times the synchronous decoding\'s (in one turn)', shipped.cpuSeconds / together.cpuSeconds, '×', (v) => v <= 1.5),
    );
    out.notes.push(
      `Each Workflow stores ${perWorkflow.toLocaleString('en-US')} Pod nodes as Argo writes them (outputs, children, times), ${(base64[0]!.length / 1024 / 1024).toFixed(2)} MiB of base64 (${(inflated / 1024 / 1024).toFixed(1)} MiB of JSON inflated; storedNodes' bound is ${MAX_NODES_BYTES / 1024 / 1024} MiB). Every contender reads the same ${workflows}, into the same map of node states.`,
      `The delay is monitorEventLoopDelay's (resolution ${RESOLUTION_MS} ms) over the contender's run; the timer gap is the longest between two ticks of a ${TICK_MS} ms setInterval armed before it. The main-thread CPU between two turns is the most the main thread ran (process.threadCpuUsage) between two ticks of a 1 ms timer: how long our own work holds the loop, which the machine's load does not inflate as it does the delays. The renew deadline is the controller's default (--leader-election-renew-deadline): a leader that renews nothing for that long stops leading. CPU is this process's user + system time.`,
      'The synchronous decoding is kept only here, as the comparison: gunzipSync with the same output bound, then JSON.parse of the whole map, as src/argo/node-status.ts did before issue 34.',
    );
  },
};

/** syncDecode is the decoding src/argo did until issue 34, for comparison: all of it in one synchronous step. */
function syncDecode(base64: string): Map<string, NodeState> {
  const json = gunzipSync(Buffer.from(base64, 'base64'), { maxOutputLength: MAX_NODES_BYTES }).toString('utf8');
  const nodes = new Map<string, NodeState>();
  for (const [id, node] of Object.entries(JSON.parse(json) as Record<string, Record<string, unknown>>)) nodes.set(id, nodeState(node));
  return nodes;
}

async function measure(run: () => Promise<number>): Promise<Measured> {
  await loopTurn();
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  let last = performance.now();
  let longest = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, TICK_MS);
  let cpuAtTick = process.threadCpuUsage();
  let hold = 0;
  const holdOf = (): number => {
    const previous = cpuAtTick;
    cpuAtTick = process.threadCpuUsage();
    return (cpuAtTick.user + cpuAtTick.system - previous.user - previous.system) / 1000;
  };
  const fine = setInterval(() => (hold = Math.max(hold, holdOf())), 1);
  histogram.enable();
  // Its first tick only starts the clock: a stall before it would go unrecorded.
  await new Promise((resolve) => setTimeout(resolve, 3 * RESOLUTION_MS));
  const cpu = process.cpuUsage();
  const started = performance.now();
  cpuAtTick = process.threadCpuUsage();
  hold = 0;
  const nodes = await run();
  const ended = performance.now();
  const used = process.cpuUsage(cpu);
  hold = Math.max(hold, holdOf());
  clearInterval(fine);
  // Let the histogram's timer fire once more: a stall that ends the run is recorded only then.
  await new Promise((resolve) => setTimeout(resolve, 3 * RESOLUTION_MS));
  histogram.disable();
  clearInterval(tick);
  return {
    seconds: (ended - started) / 1000,
    maxDelayMs: histogram.max / 1e6,
    p99DelayMs: histogram.percentile(99) / 1e6,
    longestTickGapMs: Math.max(longest, ended - last),
    longestHoldMs: hold,
    cpuSeconds: (used.user + used.system) / 1e6,
    nodes,
  };
}

function row(contender: string, m: Measured): Row {
  return {
    contender,
    figures: [
      fig('time for all', m.seconds, 's'),
      fig('event-loop delay, max', m.maxDelayMs, 'ms'),
      fig('event-loop delay, p99', m.p99DelayMs, 'ms'),
      fig(`longest gap of a ${TICK_MS} ms timer`, m.longestTickGapMs, 'ms'),
      fig('longest main-thread CPU between two turns', m.longestHoldMs, 'ms'),
      fig('CPU', m.cpuSeconds, 's'),
    ],
  };
}

/** nodesFor is how many nodes make about `bytes` of gzip, from a sample. */
function nodesFor(bytes: number): number {
  const sample = 2_000;
  const packed = Buffer.from(String(workflowStatus(podNodes('sample', sample), 'gzip')['compressedNodes']), 'base64').length;
  return Math.round((sample * bytes) / packed);
}

/** podNodes are a running Workflow's Pod nodes with the fields Argo writes for each, most of them done. */
function podNodes(workflow: string, count: number): Array<ArgoNode & Record<string, unknown>> {
  return Array.from({ length: count }, (_, i) => {
    const name = `${workflow}[${Math.floor(i / 50)}].step-${i}`;
    const done = i % 10 !== 0;
    const node: ArgoNode & Record<string, unknown> = {
      id: `${workflow}-${fnv1a32(name)}`,
      name,
      type: 'Pod',
      phase: done ? 'Succeeded' : 'Running',
      boundaryID: workflow,
      children: [`${workflow}-${fnv1a32(`${name}.next`)}`],
      templateName: 'work',
      templateScope: `local/${workflow}`,
      hostNodeName: `node-${i % 40}`,
      progress: done ? '1/1' : '0/1',
      resourcesDuration: { cpu: 3 + (i % 7), memory: 12 + (i % 13) },
    };
    if (!done) return node;
    return {
      ...node,
      taskResultSynced: true,
      finishedAt: '2026-11-26T10:10:00Z',
      outputs: { exitCode: '0', parameters: [{ name: 'out', value: `value-${i}-${(i * 7919) % 100_000}` }], artifacts: [{ name: 'main-logs', s3: { key: `${workflow}/${workflow}-${i}/main.log` } }] },
    };
  });
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
