// A watch response is a stream of JSON objects, one per line ({"type":..., "object":...}).
// Chunks from the socket end anywhere: in the middle of a line, or of a multi-byte character.
// Splitting on the newline byte (never part of a multi-byte UTF-8 sequence) keeps both intact.
import { ApiError } from './errors.ts';

/** WatchEventType is the type of a watch event we act on; ERROR events are thrown, not yielded. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** WatchEvent is one parsed line of a watch stream. */
export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

/** MalformedWatchEvent: a line of the stream that is not a watch event (not JSON, or no object in it). */
export class MalformedWatchEvent extends Error {
  override readonly name = 'MalformedWatchEvent';
}

const NEWLINE = 0x0a;
const TYPES = new Set<string>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

/** LineSplitter turns arbitrary chunks into complete lines (without the newline, blank ones dropped). */
export class LineSplitter {
  #pending: Buffer[] = [];

  /** push returns the lines that this chunk completes. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      this.#emit(lines, chunk.subarray(start, nl));
      start = nl + 1;
    }
    if (start < chunk.length) this.#pending.push(chunk.subarray(start));
    return lines;
  }

  /** flush returns the last line if the stream ended without a newline. */
  flush(): string[] {
    const lines: string[] = [];
    this.#emit(lines, Buffer.alloc(0));
    return lines;
  }

  #emit(lines: string[], tail: Buffer): void {
    const whole = this.#pending.length === 0 ? tail : Buffer.concat([...this.#pending, tail]);
    this.#pending = [];
    const line = whole.toString('utf8').trim();
    if (line !== '') lines.push(line);
  }
}

/**
 * parseWatchEvent parses one line. An ERROR event (its object a metav1.Status, e.g. code 410
 * reason Expired) is thrown as an ApiError; a line that is not a watch event is thrown as an Error.
 */
export function parseWatchEvent<T>(line: string): WatchEvent<T> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new MalformedWatchEvent(`malformed watch event (not JSON): ${line.slice(0, 200)}`);
  }
  const ev = parsed as { type?: unknown; object?: unknown };
  if (typeof ev !== 'object' || ev === null || typeof ev.object !== 'object' || ev.object === null) {
    throw new MalformedWatchEvent(`malformed watch event (no object): ${line.slice(0, 200)}`);
  }
  if (ev.type === 'ERROR') throw ApiError.fromStatus(ev.object);
  if (typeof ev.type !== 'string' || !TYPES.has(ev.type)) {
    throw new Error(`unknown watch event type ${JSON.stringify(ev.type)}`);
  }
  return { type: ev.type as WatchEventType, object: ev.object as T };
}

/** watchEvents parses a watch response body into events, as the chunks arrive. */
export async function* watchEvents<T>(chunks: AsyncIterable<Buffer>): AsyncGenerator<WatchEvent<T>> {
  const splitter = new LineSplitter();
  for await (const chunk of chunks) {
    for (const line of splitter.push(chunk)) yield parseWatchEvent<T>(line);
  }
  for (const line of splitter.flush()) yield parseWatchEvent<T>(line);
}
