// Small statistics over measured samples.

/** percentile is the nearest-rank percentile (0 < p ≤ 100) of the values; null when empty. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  // p * n first: (p / 100) * n rounds 99.9 / 100 * 1000 up to 999.0000000000001, one rank too high.
  const rank = Math.max(1, Math.ceil((p * sorted.length) / 100));
  return sorted[rank - 1] ?? null;
}

/** ratePerSecond is how many events a second passed from the first to the last time (ms). */
export function ratePerSecond(times: readonly number[]): number | null {
  if (times.length < 2) return null;
  let first = Infinity;
  let last = -Infinity;
  for (const t of times) {
    if (t < first) first = t;
    if (t > last) last = t;
  }
  // n events span n-1 intervals.
  return last > first ? ((times.length - 1) * 1000) / (last - first) : null;
}

/**
 * earliest and latest are the least and greatest of the values, null when empty. Math.min(...xs)
 * passes each value as an argument and overflows the stack past about 100,000 of them: the
 * backlog's 180,000 removal times ended a 50-minute run so.
 */
export function earliest(values: readonly number[]): number | null {
  let least: number | null = null;
  for (const v of values) if (least === null || v < least) least = v;
  return least;
}

export function latest(values: readonly number[]): number | null {
  let greatest: number | null = null;
  for (const v of values) if (greatest === null || v > greatest) greatest = v;
  return greatest;
}

/** ratio is a / b, or null when either is unknown or b is zero. */
export function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b;
}

/** per is a / b for counts (requests per removal and the like), null when b is zero. */
export function per(a: number, b: number): number | null {
  return b === 0 ? null : a / b;
}

/**
 * slopePerHour is the least-squares slope of `value` over `atMs`, per hour: how fast a sampled
 * figure (RSS, heap) grows. null with fewer than three samples or no spread in time.
 */
export function slopePerHour(samples: ReadonlyArray<{ atMs: number; value: number }>): number | null {
  return slopeFit(samples)?.perHour ?? null;
}

/** SlopeFit is a least-squares slope per hour and its standard error. */
export interface SlopeFit {
  perHour: number;
  standardErrorPerHour: number;
}

/**
 * slopeFit is slopePerHour with the slope's standard error, so that growth can be told from
 * noise: a slope within two standard errors of a bound is not evidence of exceeding it. The
 * error assumes independent residuals; RSS sampled every 10 s is not (a collection's sawtooth
 * spans several samples), so the true error is larger and this one errs on the strict side.
 */
export function slopeFit(samples: ReadonlyArray<{ atMs: number; value: number }>): SlopeFit | null {
  const n = samples.length;
  if (n < 3) return null;
  const mt = samples.reduce((a, s) => a + s.atMs, 0) / n;
  const mv = samples.reduce((a, s) => a + s.value, 0) / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    num += (s.atMs - mt) * (s.value - mv);
    den += (s.atMs - mt) ** 2;
  }
  if (den === 0) return null;
  const slope = num / den;
  const residuals = samples.reduce((a, s) => a + (s.value - mv - slope * (s.atMs - mt)) ** 2, 0);
  return { perHour: slope * 3_600_000, standardErrorPerHour: Math.sqrt(residuals / (n - 2) / den) * 3_600_000 };
}

/**
 * growthVerdict judges a fitted slope against a bound with two standard errors either side: met
 * when even the high end is within the bound, not met when even the low end exceeds it, and
 * undecided when the bound lies inside (too few samples or too much noise to tell).
 */
export function growthVerdict(fit: SlopeFit, boundPerHour: number): boolean | 'undecided' {
  const margin = 2 * fit.standardErrorPerHour;
  if (fit.perHour + margin <= boundPerHour) return true;
  if (fit.perHour - margin > boundPerHour) return false;
  return 'undecided';
}

/** runsOf splits items into stretches of consecutive items with the same key, in order. */
export function runsOf<T>(items: readonly T[], key: (item: T) => unknown): T[][] {
  const runs: T[][] = [];
  let start = 0;
  for (let i = 1; i <= items.length; i++) {
    if (i < items.length && key(items[i]!) === key(items[start]!)) continue;
    runs.push(items.slice(start, i));
    start = i;
  }
  return runs;
}

/** longestRun is the longest stretch of consecutive items with the same key (the first of equal length). */
export function longestRun<T>(items: readonly T[], key: (item: T) => unknown): T[] {
  return runsOf(items, key).reduce((best, run) => (run.length > best.length ? run : best), []);
}
