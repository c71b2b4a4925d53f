// The sweep's progress, on stderr (stdout carries only the summary): a live bar on a terminal,
// a plain line every few seconds otherwise (CI logs, kubectl exec without -t). On a terminal the
// log lines go above the bar, through the bar library, so that neither garbles the other.

import cliProgress from 'cli-progress';
import type { LogDestination } from '../log.ts';
import type { SweepTally } from './sweep-tally.ts';

const TTY_REDRAW_MS = 200;
const LINE_EVERY_MS = 5_000;

/**
 * ProgressDisplay shows a sweep's progress on a stream. Its `log` is the destination for the
 * sweep's logger: null when the stream is not a terminal (the logger then writes to stderr as
 * usual); on a terminal, lines written while the bar is drawn are printed above it.
 */
export class ProgressDisplay {
  readonly log: LogDestination | null;
  readonly #stream: NodeJS.WriteStream;
  #bars: cliProgress.MultiBar | null = null;
  #stop: (() => void) | null = null;

  constructor(stream: NodeJS.WriteStream) {
    this.#stream = stream;
    this.log = stream.isTTY ? { write: (line: string) => (this.#bars !== null ? this.#bars.log(line) : stream.write(line)) } : null;
  }

  /** start shows the tally's progress until stop(). */
  start(tally: SweepTally, dryRun: boolean): void {
    const snapshot = snapshotOf(tally);
    const verb = dryRun ? 'would remove' : 'removed';
    if (!this.#stream.isTTY) {
      const line = () => {
        const s = snapshot();
        this.#stream.write(
          `sweep: listed ${tally.podsListed}, done ${s.done}/${s.total}, ${verb}: owner-gone ${s.og} namespace-deleting ${s.nd} pod-deleting ${s.pd} recorded ${s.rc} stale ${s.st}, ${s.rate.toFixed(0)}/s\n`,
        );
      };
      const timer = setInterval(line, LINE_EVERY_MS);
      this.#stop = () => clearInterval(timer);
      return;
    }

    const bars = new cliProgress.MultiBar(
      {
        stream: this.#stream,
        format: `sweep {bar} {value}/{total} | ${verb}: owner-gone {og} namespace-deleting {nd} pod-deleting {pd} recorded {rc} stale {st} | {rateText}/s | ETA {eta_formatted}`,
        barsize: 20,
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 50,
        // Log lines wrap as usual; the bar alone is cut at the terminal's width.
        linewrap: true,
      },
      cliProgress.Presets.shades_classic,
    );
    const bar = bars.create(0, 0, { og: 0, nd: 0, pd: 0, rc: 0, st: 0, rateText: '0' });
    const redraw = () => {
      const s = snapshot();
      bar.setTotal(s.total);
      bar.update(s.done, { ...s, rateText: s.rate.toFixed(0) });
    };
    const timer = setInterval(redraw, TTY_REDRAW_MS);
    this.#bars = bars;
    this.#stop = () => {
      clearInterval(timer);
      redraw();
      bars.update(); // prints the log lines still buffered
      bars.stop();
      this.#bars = null;
    };
  }

  stop(): void {
    this.#stop?.();
    this.#stop = null;
  }
}

function snapshotOf(tally: SweepTally) {
  const started = performance.now();
  const sum = (k: 'alreadyGone' | 'skipped' | 'failed') => Object.values(tally.reasons).reduce((n, c) => n + c[k], 0);
  return () => {
    const r = tally.reasons;
    const done = tally.removedSoFar() + sum('alreadyGone') + sum('skipped') + sum('failed') + tally.unattributedFailures;
    const seconds = (performance.now() - started) / 1000;
    return {
      total: done + tally.pending,
      done,
      rate: seconds > 0 ? tally.removedSoFar() / seconds : 0,
      og: r['owner-gone'].removed,
      nd: r['namespace-deleting'].removed,
      pd: r['pod-deleting'].removed,
      rc: r.recorded.removed,
      st: r.stale.removed,
    };
  };
}
