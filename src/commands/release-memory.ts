// releaseMemory asks V8 for one full, memory-reducing garbage collection. The controller calls it
// once its caches have synced, because the initial list leaves the process at its peak size
// otherwise: 10,000 pods are about 24 MB of JSON (1.2 MB a page of 500, managedFields included)
// whose objects die young, and V8 grows its young generation (from 8 to 32 MB here) while they
// pour in. V8 gives that memory back after a full collection, and a controller at rest
// allocates too little to need one: measured with 10,000 fat pods (BENCHMARKS.md, scenario 5),
// the young generation stayed at 32 MB and RSS at 115 to 127 MB for as long as we watched (a
// minute); after this one collection (30 to 70 ms), RSS is 88 to 101 MB.
//
// Node has no API for a collection: `gc` exists only under --expose-gc. Turned on at run time, that
// V8 flag installs `gc` in contexts created afterwards, so a fresh vm context hands the function
// over, and the flag is turned off again.
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** releaseMemory runs the collection and says how long it took in milliseconds; null if V8 would not expose it. */
export function releaseMemory(): number | null {
  // "last-resort" is V8's collection of all available garbage: full collections, with the flag
  // that shrinks the young generation and releases pooled pages, until nothing more is freed.
  return collect('last-resort');
}

/**
 * collectWhenGrown returns a check for the list's reader to run after each page: once the heap
 * in use has grown by `growthBytes` since the last collection (ours or V8's), it runs one full
 * collection. A page is parsed whole (500 objects, about 1.2 MB of JSON, managedFields and all)
 * and trimmed at once, but young-generation collections that fall while a page is parsed find
 * its objects alive and promote them; V8 then lets the old generation grow to a multiple of what
 * is live before it collects there, and the process keeps that size: 100,000 pods peaked at 436
 * MB of RSS against 167 MB once synced (scenario 9 in `git show 95e957c:BENCHMARKS.md`).
 * `used` and `run` are for tests.
 */
export function collectWhenGrown(growthBytes: number, used = () => getHeapStatistics().used_heap_size, run = () => void collect('regular')): () => void {
  let base = used();
  return () => {
    const now = used();
    if (now < base) base = now; // V8 collected on its own
    if (now - base < growthBytes) return;
    run();
    base = used();
  };
}

/**
 * boundHeapGrowth runs a collectWhenGrown check every `everyMs` for the life of the process, so
 * that garbage never piles up in the old generation much beyond `growthBytes` between two
 * collections. V8 lets the old generation grow to a multiple of what is live before it collects
 * there, a multiple that rises with its heap limit up to 4 (BaseControllerTrait, V8's
 * src/heap/heap-controller.h), and node sizes that limit from the machine's memory when no
 * container limits it (4 GiB on a 24 GiB machine, 280 MB in a 256Mi container): a steady drain
 * then left V8 holding 189 MB of heap with 62 in use (BENCHMARKS.md, scenario 16). Returns the
 * stop function; the timer never holds the process up.
 */
export function boundHeapGrowth(everyMs: number, growthBytes: number, check = collectWhenGrown(growthBytes)): () => void {
  const timer = setInterval(check, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** The gc function, once handed over: a new vm context costs milliseconds, too much for every page. */
let exposed: NodeJS.GCFunction | null | undefined;

function collect(flavor: 'regular' | 'last-resort'): number | null {
  const gc = globalThis.gc ?? (exposed ??= exposeGc());
  if (gc === null) return null;
  const started = performance.now();
  gc({ type: 'major', execution: 'sync', flavor });
  return performance.now() - started;
}

function exposeGc(): NodeJS.GCFunction | null {
  setFlagsFromString('--expose-gc');
  try {
    const gc: unknown = runInNewContext('typeof gc === "function" ? gc : null');
    return typeof gc === 'function' ? (gc as NodeJS.GCFunction) : null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** HeapFigures are the two figures of V8's heap that heapToGiveBack reads, in bytes. */
export interface HeapFigures {
  used: number;
  total: number;
}

/** SLACK_BYTES is the room V8 may keep beyond twice the heap in use before it is asked to give it back. */
const SLACK_BYTES = 32 * 2 ** 20;

/**
 * heapToGiveBack says whether V8 holds much more heap than is in use: more than twice that plus
 * SLACK_BYTES. V8 grows its heap for a burst of allocation (a takeover's backlog, a relist) and
 * gives it back only when the process goes idle, which a controller under steady churn never
 * does (the soak's replicas kept several times the heap in use, and RSS with it: `git show
 * 95e957c:BENCHMARKS.md`, "Soak (scenario 11)").
 */
export function heapToGiveBack(h: HeapFigures): boolean {
  return h.total > 2 * h.used + SLACK_BYTES;
}

/**
 * giveBackPeriodically checks the heap every `everyMs` and, when heapToGiveBack says so, runs
 * releaseMemory's collection (tens of milliseconds, at most once a check). Returns the stop
 * function. The timer never holds the process up.
 */
export function giveBackPeriodically(everyMs: number, onRelease: (ms: number | null, before: HeapFigures) => void, heap = currentHeap, release = releaseMemory): () => void {
  const timer = setInterval(() => {
    const before = heap();
    if (heapToGiveBack(before)) onRelease(release(), before);
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

function currentHeap(): HeapFigures {
  const s = getHeapStatistics();
  return { used: s.used_heap_size, total: s.total_heap_size };
}
