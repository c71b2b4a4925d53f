// Reading a V8 .cpuprofile (what node --cpu-prof writes): its samples cut to a window of time,
// counted by stack, by leaf function (self time) and by category, and folded into Brendan Gregg's
// format (one stack a line, root first, frames joined by ';', then its sample count), which
// flamegraph.pl, inferno and speedscope read.

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber?: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  /** startTime: the monotonic clock in µs when the profile began (CLOCK_MONOTONIC on Linux). */
  startTime?: number;
}

/** Window: a span on the monotonic clock, in µs; fromUs 0 means from the profile's start. */
export interface Window {
  fromUs: number;
  toUs: number;
}

/** Counted: the busy samples in a window by profile node (leaf), and the idle ones apart. */
export interface Counted {
  byNode: Map<number, number>;
  busy: number;
  idle: number;
}

/** Stacks answers, for a profile node, its frames from the leaf up ((root) left out). */
export class Stacks {
  readonly #byId = new Map<number, ProfileNode>();
  readonly #parent = new Map<number, number>();
  readonly #memo = new Map<number, CallFrame[]>();

  constructor(p: CpuProfile) {
    for (const n of p.nodes) {
      this.#byId.set(n.id, n);
      for (const c of n.children ?? []) this.#parent.set(c, n.id);
    }
  }

  /** leafUp: the frames of node `id`, the leaf first. */
  leafUp(id: number): CallFrame[] {
    const known = this.#memo.get(id);
    if (known !== undefined) return known;
    const frames: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = this.#parent.get(at)) {
      const f = this.#byId.get(at)?.callFrame;
      if (f !== undefined && f.functionName !== '(root)') frames.push(f);
    }
    this.#memo.set(id, frames);
    return frames;
  }
}

/**
 * count: the samples taken within `w` (all of them without one), by node. A sample is counted, not
 * weighted by its time delta: on shared cores the sampler's intervals stretch while the thread
 * waits for a core, so a count follows CPU time better than the deltas' sum does.
 */
export function count(p: CpuProfile, w?: Window): Counted {
  const idleIds = new Set(p.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const byNode = new Map<number, number>();
  let [busy, idle] = [0, 0];
  let t = p.startTime ?? 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (w !== undefined && (t < w.fromUs || t > w.toUs)) continue;
    const id = p.samples[i]!;
    if (idleIds.has(id)) {
      idle++;
      continue;
    }
    busy++;
    byNode.set(id, (byNode.get(id) ?? 0) + 1);
  }
  return { byNode, busy, idle };
}

/** shortUrl drops what every frame of a module shares: the checkout's folder, node_modules' path. */
export function shortUrl(url: string): string {
  const deps = url.lastIndexOf('node_modules/');
  if (deps >= 0) return url.slice(deps + 'node_modules/'.length);
  const own = /\/(src|dist|bench)\/(?!.*\/(src|dist|bench)\/)/.exec(url);
  if (own) return url.slice(own.index + 1);
  return url.replace(/^file:\/\//, '');
}

/** frameLabel names a frame as a flame graph shows it: the function, and where it is defined. */
export function frameLabel(f: CallFrame): string {
  const name = f.functionName === '' ? '(anonymous)' : f.functionName;
  const at = f.url === '' ? '' : ` ${shortUrl(f.url)}:${(f.lineNumber ?? 0) + 1}`;
  // ';' separates frames in the folded format, and a trailing number would read as the count.
  return `${name}${at}`.replaceAll(';', ':').replace(/\s+/g, ' ');
}

/** fold: the counted samples as folded stacks, root first, one line per distinct stack, sorted. */
export function fold(p: CpuProfile, c: Counted): string[] {
  const stacks = new Stacks(p);
  const lines = new Map<string, number>();
  for (const [id, n] of c.byNode) {
    const key = stacks.leafUp(id).map(frameLabel).reverse().join(';');
    lines.set(key, (lines.get(key) ?? 0) + n);
  }
  return [...lines].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([stack, n]) => `${stack} ${n}`);
}

/** selfTimes: the counted samples by their leaf frame. */
export function selfTimes(p: CpuProfile, c: Counted): Map<string, number> {
  const stacks = new Stacks(p);
  const out = new Map<string, number>();
  for (const [id, n] of c.byNode) {
    const leaf = stacks.leafUp(id)[0];
    const key = leaf === undefined ? '(root)' : frameLabel(leaf);
    out.set(key, (out.get(key) ?? 0) + n);
  }
  return out;
}

/** byCategory: the counted samples by the category `categorise` gives their frames (the leaf first). */
export function byCategory(p: CpuProfile, c: Counted, categorise: (leafUp: readonly CallFrame[]) => string): Map<string, number> {
  const stacks = new Stacks(p);
  const out = new Map<string, number>();
  for (const [id, n] of c.byNode) {
    const k = categorise(stacks.leafUp(id));
    out.set(k, (out.get(k) ?? 0) + n);
  }
  return out;
}
