// A watch response is a stream of JSON objects, one per line ({"type":..., "object":...}).
// Chunks from the socket end anywhere: in the middle of a line, or of a multi-byte character.
// Splitting on the newline byte (never part of a multi-byte UTF-8 sequence) keeps both intact.
// Lines stay bytes until parsed, so that what is never read (managed fields) is never decoded.
import { ApiError } from './errors.ts';
import { managedFieldsCut } from './managed-fields-cut.ts';

/** WatchEventType is the type of a watch event we act on; ERROR events are thrown, not yielded. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/**
 * WatchEvent is one parsed line of a watch stream. Its object's metadata may lack managedFields,
 * which nothing here reads: parseWatchEvent leaves them unparsed when it safely can.
 */
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

/** LineSplitter turns arbitrary chunks into complete lines (bytes, without the newline, blank ones dropped). */
export class LineSplitter {
  #pending: Buffer[] = [];

  /** push returns the lines that this chunk completes. */
  push(chunk: Buffer): Buffer[] {
    const lines: Buffer[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      this.#emit(lines, chunk, start, nl);
      start = nl + 1;
    }
    if (start < chunk.length) this.#pending.push(chunk.subarray(start));
    return lines;
  }

  /** flush returns the last line if the stream ended without a newline. */
  flush(): Buffer[] {
    const lines: Buffer[] = [];
    if (this.#pending.length > 0) this.#emit(lines, Buffer.alloc(0), 0, 0);
    return lines;
  }

  #emit(lines: Buffer[], chunk: Buffer, start: number, end: number): void {
    let line: Buffer;
    if (this.#pending.length === 0) line = chunk.subarray(start, end);
    else {
      line = Buffer.concat([...this.#pending, chunk.subarray(start, end)]);
      this.#pending = [];
    }
    line = trimmed(line);
    if (line.length > 0) lines.push(line);
  }
}

/**
 * trimmed is line without the whitespace around it, as String.prototype.trim sees it: ASCII
 * whitespace (a CRLF's CR) taken off as bytes, a line of other whitespace alone made empty.
 */
function trimmed(line: Buffer): Buffer {
  let start = 0;
  let end = line.length;
  while (start < end && isSpace(line[start]!)) start++;
  while (end > start && isSpace(line[end - 1]!)) end--;
  if (start === end || (line[start]! >= 0x80 && line.toString('utf8', start, end).trim() === '')) return line.subarray(0, 0);
  return start === 0 && end === line.length ? line : line.subarray(start, end);
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

/**
 * parseWatchEvent parses one line. An ERROR event (its object a metav1.Status, e.g. code 410
 * reason Expired) is thrown as an ApiError; a line that is not a watch event is thrown as an Error.
 */
export function parseWatchEvent<T>(line: Buffer | string): WatchEvent<T> {
  const bytes = typeof line === 'string' ? Buffer.from(line) : line;
  let parsed: unknown;
  try {
    parsed = parseLine(bytes);
  } catch {
    throw new MalformedWatchEvent(`malformed watch event (not JSON): ${excerpt(bytes)}`);
  }
  const ev = parsed as { type?: unknown; object?: unknown };
  if (typeof ev !== 'object' || ev === null || typeof ev.object !== 'object' || ev.object === null) {
    throw new MalformedWatchEvent(`malformed watch event (no object): ${excerpt(bytes)}`);
  }
  if (ev.type === 'ERROR') throw ApiError.fromStatus(ev.object);
  if (typeof ev.type !== 'string' || !TYPES.has(ev.type)) {
    throw new Error(`unknown watch event type ${JSON.stringify(ev.type)}`);
  }
  return { type: ev.type as WatchEventType, object: ev.object as T };
}

/**
 * parseLine parses a line without its managed fields where managedFieldsCut proves that only
 * they are left out, and whole otherwise. Half a pod's metadata on the wire, and most of its
 * objects once parsed, are managed fields that no decision reads.
 */
function parseLine(line: Buffer): unknown {
  const cut = managedFieldsCut(line);
  if (cut !== -1) {
    try {
      return JSON.parse(`${line.toString('utf8', 0, cut)}}}}`);
    } catch {
      // Not the shape the cut assumes after all: the whole line decides.
    }
  }
  return JSON.parse(line.toString('utf8').trim());
}

function excerpt(line: Buffer): string {
  return line.toString('utf8', 0, Math.min(line.length, 800)).trim().slice(0, 200);
}

/** watchEvents parses a watch response body into events, as the chunks arrive. */
export async function* watchEvents<T>(chunks: AsyncIterable<Buffer>): AsyncGenerator<WatchEvent<T>> {
  const splitter = new LineSplitter();
  for await (const chunk of chunks) {
    for (const line of splitter.push(chunk)) yield parseWatchEvent<T>(line);
  }
  for (const line of splitter.flush()) yield parseWatchEvent<T>(line);
}
