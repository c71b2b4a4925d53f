// The backlog scenario's figures over a drain: its rate in each tenth (does it decay?), and how
// long orphans waited from their owner's deletion to freed.

/**
 * ratesByTenth splits a drain's removal times (ms, any order) into `parts` stretches of equal
 * count, in time order, and gives each stretch's removals a second. The stretches tile the drain:
 * each runs from the previous one's last removal to its own last removal (the first from the
 * first removal), so that no pause between stretches goes unmeasured. null for a stretch of no
 * time (or when there are fewer removals than parts).
 */
export function ratesByTenth(times: readonly number[], parts = 10): (number | null)[] {
  const sorted = [...times].sort((a, b) => a - b);
  const n = sorted.length;
  if (n < parts + 1) return Array.from({ length: parts }, () => null);
  // boundary k is the rank (0-based) that ends stretch k; boundary 0 is the first removal.
  const rankAt = (k: number): number => (k === 0 ? 0 : Math.round((k * (n - 1)) / parts));
  const rates: (number | null)[] = [];
  for (let k = 0; k < parts; k++) {
    const from = rankAt(k);
    const to = rankAt(k + 1);
    const span = sorted[to]! - sorted[from]!;
    rates.push(span > 0 ? ((to - from) * 1000) / span : null);
  }
  return rates;
}

/** LatePod is an orphan made during a drain: its Workflow is deleted while other pods are being freed. */
export interface LatePod {
  name: string;
  namespace: string;
  owner: string;
}

/** LateWait is how long a late pod waited from its owner's deletion, and what was served meanwhile. */
export interface LateWait extends LatePod {
  waitMs: number;
  /** ahead: pods of its namespace freed after its owner's deletion and before it. */
  ahead: number;
  /** handOuts: pods freed in any namespace from its owner's deletion to it, itself included. */
  handOuts: number;
  /** namespaces: those with a pod still to free when its owner was deleted (its own included). */
  namespaces: number;
}

/**
 * lateWaits pairs each late pod with its owner's deletion and its freeing (ms), and counts what
 * the drain freed meanwhile, so that each wait can be set against the fair queue's bound (a key
 * with r keys of its own namespace ahead of it is handed out within (r + 1) · N turns, N the
 * namespaces with work; src/queue/fair-ready.ts). `namespaceOf` names every pod of the drain, the
 * late ones included; a pod missing from `freedAt` was not freed (by the end of the drain). Pods
 * whose owner was not deleted are left out; those not freed are counted apart.
 */
export function lateWaits(
  late: readonly LatePod[],
  ownerDeletedAt: ReadonlyMap<string, number>,
  freedAt: ReadonlyMap<string, number>,
  namespaceOf: ReadonlyMap<string, string>,
): { waits: LateWait[]; unfreed: number } {
  const all: number[] = [];
  const byNamespace = new Map<string, number[]>();
  // A namespace's last freeing; Infinity while a pod of it is not freed.
  const lastFreed = new Map<string, number>();
  for (const [name, namespace] of namespaceOf) {
    const t = freedAt.get(name) ?? Infinity;
    lastFreed.set(namespace, Math.max(lastFreed.get(namespace) ?? -Infinity, t));
    if (t === Infinity) continue;
    all.push(t);
    let times = byNamespace.get(namespace);
    if (times === undefined) byNamespace.set(namespace, (times = []));
    times.push(t);
  }
  all.sort((a, b) => a - b);
  for (const times of byNamespace.values()) times.sort((a, b) => a - b);

  const waits: LateWait[] = [];
  let unfreed = 0;
  for (const pod of late) {
    const deleted = ownerDeletedAt.get(pod.owner);
    if (deleted === undefined) continue;
    const freed = freedAt.get(pod.name);
    if (freed === undefined) {
      unfreed++;
      continue;
    }
    const own = byNamespace.get(pod.namespace) ?? [];
    waits.push({
      ...pod,
      waitMs: freed - deleted,
      ahead: rank(own, freed, false) - rank(own, deleted, true),
      handOuts: rank(all, freed, true) - rank(all, deleted, true),
      namespaces: [...lastFreed.values()].filter((t) => t > deleted).length,
    });
  }
  return { waits, unfreed };
}

/** rank: how many of the sorted times are below t (or at or below it, when `inclusive`). */
function rank(sorted: readonly number[], t: number, inclusive: boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < t || (inclusive && sorted[mid] === t)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
