// Where a controller's CPU went, from a V8 CPU profile (BENCH_PROFILE_DIR, bench/lib/child.ts):
// each sample is put in the first category found walking its stack from the leaf up, so that a
// native leaf (JSON.parse, a write) counts for the module that called it. Shares are of the
// samples that were not idle, between the first and last sample that ran `from` (default: the
// reconcile step, so that startup and the wait after the last removal are left out).
//
// Run: sh .ci/with-node24 node bench/profile-shares.ts FILE.cpuprofile [--from FUNCTION|--all]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** CATEGORIES, in the order they are tried on each frame; the first that matches names it. */
const CATEGORIES: ReadonlyArray<[string, (f: CallFrame) => boolean]> = [
  ['the collector', (f) => f.functionName === '(garbage collector)'],
  ['logging (pino, src/log)', (f) => /node_modules\/(pino|sonic-boom|thread-stream)|\/(src|dist)\/log/.test(f.url)],
  ['metrics (prom-client, src/metrics)', (f) => /node_modules\/prom-client|\/(src|dist)\/metrics\//.test(f.url)],
  ['p-retry', (f) => /node_modules\/p-retry/.test(f.url)],
  ['API budget (bottleneck, src/kube/budget)', (f) => /node_modules\/bottleneck|\/(src|dist)\/kube\/(adaptive-)?budget/.test(f.url)],
  ['watch decoding (src/kube/watch-stream)', (f) => /\/(src|dist)\/kube\/watch-stream/.test(f.url)],
  ['cache: reflector, trim, store', (f) => /\/(src|dist)\/cache\//.test(f.url)],
  ['controller: event handlers, sources', (f) => /\/(src|dist)\/controller\/(controller|sources|event-filter|namespace-source)/.test(f.url)],
  ['queue', (f) => /\/(src|dist)\/queue\//.test(f.url)],
  ['Events', (f) => /\/(src|dist)\/events\//.test(f.url)],
  ['reconcile, decide, owners, records', (f) => /\/(src|dist)\/(work|decide|owners|argo)\/|\/(src|dist)\/controller\/(cleanup|api)/.test(f.url)],
  ['our API client (src/kube)', (f) => /\/(src|dist)\/kube\//.test(f.url)],
  ['abort signals', (f) => /internal\/abort_controller/.test(f.url)],
  ['Node: http, net, tls, streams, zlib', (f) => /^node:(_http_|http|https|net|tls|_tls_|stream|zlib|internal\/(streams|http|tls|net|stream_base|js_stream|zlib))/.test(f.url)],
  ['Node: ticks, timers, microtasks', (f) => /^node:internal\/(process\/task_queues|timers)|^node:timers/.test(f.url) || f.functionName === '(program)'],
];

/** shares: samples by category, between the first and last that ran `from` (every sample when null). */
export function shares(p: CpuProfile, from: string | null): { byCategory: Map<string, number>; busy: number; idle: number } {
  const parent = new Map<number, ProfileNode>();
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n);
  const stackHas = (id: number, name: string): boolean => {
    for (let n = byId.get(id); n !== undefined; n = parent.get(n.id)) if (n.callFrame.functionName === name) return true;
    return false;
  };
  let first = 0;
  let last = p.samples.length - 1;
  if (from !== null) {
    first = p.samples.findIndex((id) => stackHas(id, from));
    if (first < 0) throw new Error(`no sample ran ${from}`);
    while (last > first && !stackHas(p.samples[last]!, from)) last--;
  }
  const memo = new Map<number, string>();
  const categoryOf = (id: number): string => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    let found = 'other';
    for (let n = byId.get(id); n !== undefined; n = parent.get(n.id)) {
      const hit = CATEGORIES.find(([, test]) => test(n.callFrame));
      if (hit) {
        found = hit[0];
        break;
      }
    }
    memo.set(id, found);
    return found;
  };
  const byCategory = new Map<string, number>();
  let idle = 0;
  let busy = 0;
  for (let i = first; i <= last; i++) {
    const id = p.samples[i]!;
    if (byId.get(id)?.callFrame.functionName === '(idle)') {
      idle++;
      continue;
    }
    busy++;
    const c = categoryOf(id);
    byCategory.set(c, (byCategory.get(c) ?? 0) + 1);
  }
  return { byCategory, busy, idle };
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { from: { type: 'string', default: 'reconcile' }, all: { type: 'boolean', default: false } } });
  const file = positionals[0];
  if (file === undefined) {
    console.error('usage: node bench/profile-shares.ts FILE.cpuprofile [--from FUNCTION|--all]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const { byCategory, busy, idle } = shares(profile, values.all ? null : values.from);
  console.log(`${busy.toLocaleString('en-US')} busy samples, ${idle.toLocaleString('en-US')} idle, ${values.all ? 'the whole profile' : `from the first to the last sample running ${values.from}`}`);
  console.log('| share of the main thread\'s busy samples | |\n| --- | ---: |');
  for (const [c, n] of [...byCategory].sort((a, b) => b[1] - a[1])) console.log(`| ${c} | ${((100 * n) / busy).toFixed(1)} % |`);
}

if (import.meta.main) main();
