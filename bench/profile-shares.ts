// Where a controller's CPU went, from a V8 CPU profile (BENCH_PROFILE_DIR, bench/lib/child.ts):
// each sample is put in the first category found walking its stack from the leaf up, so that a
// native leaf (JSON.parse, a write) counts for the module that called it. Shares are of the
// samples that were not idle, between the first and last sample that ran `from` (default: the
// reconcile step, so that startup and the wait after the last removal are left out).
//
// Run: sh .ci/with-node24 node bench/profile-shares.ts FILE.cpuprofile [--from FUNCTION|--all]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { byCategory, count, Stacks, type CallFrame, type CpuProfile } from './lib/cpuprofile.ts';

/** NODE_IO: Node's HTTP, TLS and stream code, split by categorise into what its stack shows it serves. */
const NODE_IO = 'Node: http, net, tls, streams, zlib';

/**
 * BLOCKED: samples of a thread that waits and spends no CPU: pino's sonic-boom sleeping in
 * Atomics.wait (atomic-sleep) before it writes again to a full stdout pipe. bench/flame.ts keeps
 * them out of the CPU it splits.
 */
export const BLOCKED = 'blocked: pino waiting for a full stdout pipe (atomic-sleep)';

/** CATEGORIES, in the order they are tried on each frame; the first that matches names it. */
export const CATEGORIES: ReadonlyArray<[string, (f: CallFrame) => boolean]> = [
  [BLOCKED, (f) => /node_modules\/atomic-sleep\//.test(f.url) || f.functionName === 'Atomics.wait'],
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
  ['the bare loop\'s own code (bench/contenders/ceiling)', (f) => /\/bench\/contenders\/ceiling/.test(f.url)],
  ['our API client (src/kube)', (f) => /\/(src|dist)\/kube\//.test(f.url)],
  ['abort signals', (f) => /internal\/abort_controller/.test(f.url)],
  [NODE_IO, (f) => /^node:(_http_|http|https|net|tls|_tls_|stream|zlib|internal\/(streams|http|tls|net|stream_base|js_stream|zlib|dns))/.test(f.url)],
  ['Node: ticks, timers, microtasks', (f) => /^node:internal\/(process\/task_queues|timers)|^node:timers/.test(f.url)],
  ['Node: modules loaded and compiled', (f) => /^node:internal\/(modules|bootstrap)/.test(f.url)],
  ['V8 and native code outside JS ((program))', (f) => f.functionName === '(program)'],
];

/** Our code that sends requests, or reads a watch: the callers that tell Node's I/O apart. */
const SENDS = (f: CallFrame): boolean => /\/(src|dist)\/(kube\/(client|transport|metadata-api|http2)|controller\/cleanup|work\/)|\/bench\/contenders\/ceiling/.test(f.url);
const WATCHES = (f: CallFrame): boolean => /\/(src|dist)\/(kube\/(watch|reflector)|cache\/)/.test(f.url);
const named = (names: readonly string[]) => (f: CallFrame): boolean => names.includes(f.functionName);
const HEADS = named(['parserOnHeadersComplete', 'parserOnIncomingClient']);
const BODIES = named(['parserOnBody', 'parserOnMessageComplete']);
const READS = named(['onStreamRead', 'onReadableStreamEnd']);
const WRITES = named(['writeGeneric', 'writevGeneric', 'writeUtf8String', 'writeLatin1String', 'writeBuffer', 'writev', 'onWriteComplete']);
const HAND_OFFS = named(['emitFreeNT', 'onSocketNT', 'tickOnSocket', 'removeSocket', 'keepSocketAlive', 'addRequest', 'createSocket']);

/**
 * categorise names the category of a sample from its frames, the leaf first: the first frame any
 * category matches names it, so that a native leaf (JSON.parse, a write) counts for the module that
 * called it. Node's HTTP and TLS code is split by what is further up its stack: our code sending a
 * request or reading a watch; else the HTTP parser's callback (a response's head: one a request; a
 * body: the watches' events and the drained answers); else a socket read (TLS decryption), a
 * socket write (TLS encryption: a request's bytes, flushed once its socket is assigned), the
 * agent's hand-off of a keep-alive socket from one request to the next, or the rest. The bare loop reads no watch, so the difference
 * of the socket-read rows between the two is mostly the controller's watches.
 */
export function categorise(leafUp: readonly CallFrame[]): string {
  for (let i = 0; i < leafUp.length; i++) {
    const hit = CATEGORIES.find(([, test]) => test(leafUp[i]!));
    if (hit === undefined) continue;
    if (hit[0] !== NODE_IO) return hit[0];
    const above = leafUp.slice(i + 1);
    const first = above.findIndex((f) => SENDS(f) || WATCHES(f));
    if (first >= 0) return WATCHES(above[first]!) ? 'Node HTTP/TLS: called by the watch reader' : 'Node HTTP/TLS: called by our client, sending';
    const rest = leafUp.slice(i);
    if (rest.some(HEADS)) return 'Node HTTP/TLS: response heads (one a request)';
    if (rest.some(BODIES)) return 'Node HTTP/TLS: response bodies (watch events, drained answers)';
    if (rest.some(READS)) return 'Node HTTP/TLS: socket reads, TLS decryption';
    if (rest.some(WRITES)) return 'Node HTTP/TLS: socket writes, TLS encryption';
    if (rest.some(HAND_OFFS)) return 'Node HTTP/TLS: the agent\'s socket hand-offs (assign, free, keep alive)';
    return 'Node HTTP/TLS: the rest (stream ends, timeouts)';
  }
  return 'other';
}

/**
 * shares: samples by category, between the first and last that ran `from` (every sample when
 * null); the window is cut by sample, so that it needs no clock.
 */
export function shares(p: CpuProfile, from: string | null): { byCategory: Map<string, number>; busy: number; idle: number } {
  const stacks = new Stacks(p);
  const runs = (id: number): boolean => from !== null && stacks.leafUp(id).some((f) => f.functionName === from);
  let first = 0;
  let last = p.samples.length - 1;
  if (from !== null) {
    first = p.samples.findIndex(runs);
    if (first < 0) throw new Error(`no sample ran ${from}`);
    while (last > first && !runs(p.samples[last]!)) last--;
  }
  const cut: CpuProfile = { ...p, samples: p.samples.slice(first, last + 1), timeDeltas: p.samples.slice(first, last + 1).map(() => 0) };
  const counted = count(cut);
  return { byCategory: byCategory(p, counted, categorise), busy: counted.busy, idle: counted.idle };
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
