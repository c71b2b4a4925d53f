// CeilingSeries keeps the ceiling's runs at each concurrency. On a shared machine one run can
// land in a busy moment, so the ceiling is run before and after the contenders and the better
// run counts: a ratio to the ceiling then errs against the contender, never for it.
import { fig, format, type Figure, type Row } from './result.ts';
import { ratio } from './stats.ts';

interface Run {
  rate: number | null;
  figures: Figure[];
}

export class CeilingSeries {
  readonly #runs = new Map<number, Run[]>();

  /** add records one run: its removal rate and its other figures. */
  add(concurrency: number, rate: number | null, figures: Figure[]): void {
    const runs = this.#runs.get(concurrency) ?? [];
    runs.push({ rate, figures });
    this.#runs.set(concurrency, runs);
  }

  /** best is the highest rate measured at this concurrency. */
  best(concurrency: number): number | null {
    return this.#bestRun(concurrency)?.rate ?? null;
  }

  /** lowest is the lowest value of a figure over the runs at this concurrency (e.g. CPU per removal). */
  lowest(concurrency: number, figure: string): number | null {
    const values = (this.#runs.get(concurrency) ?? []).flatMap((r) => r.figures.filter((f) => f.name === figure && f.value !== null).map((f) => f.value as number));
    return values.length === 0 ? null : Math.min(...values);
  }

  /** bestOfAll is the highest rate at any concurrency, and that concurrency: what the server can do. */
  bestOfAll(): { concurrency: number; rate: number } | null {
    let best: { concurrency: number; rate: number } | null = null;
    for (const c of this.#runs.keys()) {
      const rate = this.best(c);
      if (rate !== null && (best === null || rate > best.rate)) best = { concurrency: c, rate };
    }
    return best;
  }

  /** rows has one row per concurrency, from its best run, noting every run's rate. */
  rows(): Row[] {
    return [...this.#runs.keys()].map((c) => {
      const runs = this.#runs.get(c) ?? [];
      const best = this.#bestRun(c);
      const row: Row = { contender: `ceiling, concurrency ${c}`, figures: [fig('removals/s', best?.rate ?? null), fig('ratio to ceiling', 1), ...(best?.figures ?? [])] };
      if (runs.length > 1) row.note = `best of ${runs.length} runs: ${runs.map((r) => format(r.rate)).join(' and ')}/s`;
      return row;
    });
  }

  #bestRun(concurrency: number): Run | undefined {
    let best: Run | undefined;
    for (const r of this.#runs.get(concurrency) ?? []) if (r.rate !== null && (best?.rate == null || r.rate > best.rate)) best = r;
    return best;
  }
}

/** withRatio puts a contender's ratio to the ceiling right after its removal rate. */
export function withRatio(row: Row, rate: number | null, ceiling: number | null): Row {
  const [first, ...rest] = row.figures;
  return { ...row, figures: [...(first ? [first] : []), fig('ratio to ceiling', ratio(rate, ceiling)), ...rest] };
}
