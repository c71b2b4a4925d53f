// Lines handed on in batches. At the default level the controller logs a line per removal, and a
// synchronous write(2) per line held its main thread for a seventh of its profile's samples in
// scenario 1 (`git show 08e11c5:BENCHMARKS.md`, "What the controller does per removal"), waiting on the pipe's reader
// while answers queued behind it. Batched, a busy controller makes a write per few dozen lines; a
// quiet one still shows each line within maxDelayMs.
import type { LogDestination } from './destination.ts';

export interface BatchLimits {
  /** maxChars: the waiting lines are handed on once they hold this many characters. */
  maxChars: number;
  /** maxDelayMs: no line waits longer than this. */
  maxDelayMs: number;
}

/** BatchedDestination is a LogDestination whose waiting lines can be written at once. */
export interface BatchedDestination extends LogDestination {
  /** writeNow hands every waiting line on, synchronously when the destination writes so. */
  writeNow(): void;
}

/**
 * batched holds lines and hands them on to `destination` in one write, in order. Its timer does
 * not keep the process alive: whoever exits must call writeNow first (see src/log.ts).
 */
export function batched(destination: LogDestination, limits: BatchLimits): BatchedDestination {
  let waiting = '';
  let timer: NodeJS.Timeout | null = null;
  const writeNow = (): void => {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    if (waiting === '') return;
    const lines = waiting;
    waiting = '';
    destination.write(lines);
  };
  return {
    write(line: string) {
      waiting += line;
      if (waiting.length >= limits.maxChars) writeNow();
      else if (timer === null) timer = setTimeout(writeNow, limits.maxDelayMs).unref();
      return true;
    },
    flush(callback) {
      writeNow();
      if (destination.flush) destination.flush(callback);
      else callback();
    },
    writeNow,
  };
}
