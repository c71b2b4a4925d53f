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

/**
 * waitsFromDeletion pairs each pod with its owner's deletion time and its freed time (ms), and
 * returns the waits of the pods freed, and how many were not freed at all.
 */
export function waitsFromDeletion(pods: ReadonlyArray<{ name: string; owner: string }>, ownerDeletedAt: ReadonlyMap<string, number>, freedAt: ReadonlyMap<string, number>): { waitsMs: number[]; unfreed: number } {
  const waitsMs: number[] = [];
  let unfreed = 0;
  for (const p of pods) {
    const deleted = ownerDeletedAt.get(p.owner);
    const freed = freedAt.get(p.name);
    if (deleted === undefined) continue;
    if (freed === undefined) unfreed++;
    else waitsMs.push(freed - deleted);
  }
  return { waitsMs, unfreed };
}
