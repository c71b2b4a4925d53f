// The sweep's progress, on stderr (stdout carries only the summary): a live bar on a terminal,
// a plain line every few seconds otherwise (CI logs, kubectl exec without -t).

import cliProgress from 'cli-progress';
import type { SweepTally } from './sweep-tally.ts';

const TTY_REDRAW_MS = 200;
const LINE_EVERY_MS = 5_000;

export interface Progress {
  stop(): void;
}

export function startProgress(tally: SweepTally, stream: NodeJS.WriteStream, dryRun: boolean): Progress {
  const started = performance.now();
  const snapshot = () => {
    const r = tally.reasons;
    const done = tally.removedSoFar() + sum('alreadyGone') + sum('skipped') + sum('failed');
    const seconds = (performance.now() - started) / 1000;
    return {
      total: done + tally.pending,
      done,
      rate: seconds > 0 ? tally.removedSoFar() / seconds : 0,
      og: r['owner-gone'].removed,
      pd: r['pod-deleting'].removed,
      rc: r.recorded.removed,
      st: r.stale.removed,
    };
  };
  const sum = (k: 'alreadyGone' | 'skipped' | 'failed') => Object.values(tally.reasons).reduce((n, c) => n + c[k], 0);
  const verb = dryRun ? 'would remove' : 'removed';

  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        stream,
        format: `sweep {bar} {value}/{total} | ${verb}: owner-gone {og} pod-deleting {pd} recorded {rc} stale {st} | {rateText}/s | ETA {eta_formatted}`,
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(0, 0, { og: 0, pd: 0, rc: 0, st: 0, rateText: '0' });
    const timer = setInterval(() => {
      const s = snapshot();
      bar.setTotal(s.total);
      bar.update(s.done, { ...s, rateText: s.rate.toFixed(0) });
    }, TTY_REDRAW_MS);
    return {
      stop: () => {
        clearInterval(timer);
        const s = snapshot();
        bar.setTotal(s.total);
        bar.update(s.done, { ...s, rateText: s.rate.toFixed(0) });
        bar.stop();
      },
    };
  }

  const line = () => {
    const s = snapshot();
    stream.write(
      `sweep: listed ${tally.podsListed}, done ${s.done}/${s.total}, ${verb}: owner-gone ${s.og} pod-deleting ${s.pd} recorded ${s.rc} stale ${s.st}, ${s.rate.toFixed(0)}/s\n`,
    );
  };
  const timer = setInterval(line, LINE_EVERY_MS);
  return { stop: () => clearInterval(timer) };
}
