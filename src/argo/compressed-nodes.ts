// Decoding status.compressedNodes within bounds that no writer of a Workflow can move. Anyone who
// may update a Workflow (tenants, in their namespaces: Argo's CRD has no status subresource) writes
// this field, and one decoding serves the whole cluster's cleanup, so:
//   - time and memory: up to MAX_COMPRESSED_CHARS of base64 inflate to at most MAX_NODES_BYTES, on
//     libuv's thread pool (zlib's asynchronous API), and the map holds at most MAX_NODES nodes,
//     counted as they are met, so that a map of millions of tiny nodes stops early;
//   - nothing but the nodes asked for is built: the inflated bytes are checked as JSON in place,
//     and only the wanted nodes' wanted fields become JavaScript values. Parsing every node built
//     three million objects for a map of `{"a":{},"b":{},...}` (issue 44: 405 MB above the
//     baseline, past the 256Mi limit), and one node of `[{},{},...]` would build ten million;
//   - the event loop: the scan returns to the loop every SLICE_BYTES bytes or SLICE_TOKENS tokens,
//     whichever comes first, so that neither long texts nor tiny members hold it (scenario 14:
//     long holds missed Lease renewals and stalled every worker);
//   - one decoding runs at a time, so that one inflated map is held at a time.
// What JSON it accepts is exactly what JSON.parse accepts, nested at most MAX_DEPTH deep as in
// Go's encoding/json, which Argo decodes the map with: text that Argo cannot read frees nothing.
// Only the nodes leave this file; the rule that reads them is node-status.ts's.

import { setImmediate as loopTurn } from 'node:timers/promises';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, zstdDecompress } from 'node:zlib';

/**
 * MAX_COMPRESSED_CHARS bounds status.compressedNodes (base64): a Workflow is at most etcd's
 * request limit (1.5 MiB by default; Argo compresses past 1 MiB), so anything longer is not
 * Argo's. MAX_NODES_BYTES bounds what it may inflate to, and so the time one decoding takes
 * (zlib stops at the limit).
 */
export const MAX_COMPRESSED_CHARS = 4 * 1024 * 1024;
export const MAX_NODES_BYTES = 32 * 1024 * 1024;

/**
 * SMALLEST_NODE is about the least a node of Argo's takes in the map: Argo creates every node
 * with its ID (the key, and again as `id`), name, type, phase and start time (initializeNode,
 * workflow/controller/operator.go), and finishedAt is a metav1.Time, which encoding/json writes
 * even when empty. Real nodes are longer: names carry the Workflow's, IDs a ten-digit hash,
 * and most nodes a displayName, templateName, templateScope, progress and a boundaryID.
 */
export const SMALLEST_NODE = '"w-1":{"id":"w-1","name":"w","type":"Pod","phase":"Pending","startedAt":"2026-01-01T00:00:00Z","finishedAt":null},';

/**
 * MAX_NODES bounds the nodes of one map: as many of the smallest nodes as MAX_NODES_BYTES holds
 * (about 300,000). A map of more is not Argo's own, and is unreadable: its pods wait.
 */
export const MAX_NODES = Math.floor(MAX_NODES_BYTES / SMALLEST_NODE.length);

/** MAX_DEPTH is Go's encoding/json's nesting limit (maxNestingDepth): deeper, Argo cannot read the map either. */
export const MAX_DEPTH = 10_000;

/**
 * SLICE_BYTES and SLICE_TOKENS bound the work between two turns of the event loop: 16,384 tiny
 * members took 3.4 ms on the 2-core machine measured, 65,536 took 9 ms. The longest hold left is
 * zlib's: it joins its output chunks in one step when it is done (about 20 ms for 31 MB).
 */
export const SLICE_BYTES = 256 * 1024;
export const SLICE_TOKENS = 16 * 1024;

/**
 * CHUNK_BYTES is zlib's output chunk: each one is a callback on the loop, and the default 16 KiB
 * makes two thousand of them for a 32 MiB map.
 */
const CHUNK_BYTES = 1024 * 1024;

const inflaters = { gunzip: promisify(gunzip), zstd: promisify(zstdDecompress), brotli: promisify(brotliDecompress) };

/** UnreadableNodes: compressedNodes that are not Argo's compressed node map; the message says why. */
export class UnreadableNodes extends Error {
  override readonly name = 'UnreadableNodes';
}

/**
 * COMPOSITE stands for an object or array value of a field handed over: only strings, numbers,
 * booleans and null are built. It is no field's value in Argo's node.
 */
export const COMPOSITE: object = Object.freeze({});

/** NodeReader takes one wanted node's members, in the order written, then `end`. */
export interface NodeReader {
  /** member: a member whose key `field` asked for; its value, or COMPOSITE. */
  member(key: string, value: unknown): void;
  /** end: the node is over; `object` is false when its value was no object (then it had no member). */
  end(object: boolean): void;
}

/** NodeSink says which nodes and fields to read; everything else is only checked. */
export interface NodeSink {
  /** node: a reader for the node of this ID, or null to skip it. A node written twice is read twice. */
  node(id: string): NodeReader | null;
  /** field: whether a member of a read node is handed over, by its key as written. */
  field(key: string): boolean;
}

export interface DecodeOptions {
  sliceBytes?: number;
  sliceTokens?: number;
  maxNodes?: number;
}

let previous: Promise<unknown> = Promise.resolve();

/**
 * decodeCompressedNodes decodes compressedNodes as Argo's DecompressContent does (base64, then
 * zstd or gzip by their magic bytes, anything else brotli, which has none), checks the map, and
 * hands the nodes and fields `sink` asks for to their readers, in the order written: a node
 * written twice counts as written last, as in JSON.parse and Go's encoding/json. Throws
 * UnreadableNodes. Decodings queue behind each other.
 */
export function decodeCompressedNodes(base64: string, sink: NodeSink, o: DecodeOptions = {}): Promise<void> {
  const run = previous.then(async () => scan(await inflate(base64), sink, o));
  previous = run.catch(() => undefined);
  return run;
}

async function inflate(base64: string): Promise<Buffer> {
  if (base64.length > MAX_COMPRESSED_CHARS) throw new UnreadableNodes(`longer than ${MAX_COMPRESSED_CHARS} characters`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) throw new UnreadableNodes('not base64');
  const bytes = Buffer.from(base64, 'base64');
  const options = { maxOutputLength: MAX_NODES_BYTES, chunkSize: CHUNK_BYTES };
  const algorithm =
    bytes[0] === 0x28 && bytes[1] === 0xb5 && bytes[2] === 0x2f && bytes[3] === 0xfd ? 'zstd' : bytes[0] === 0x1f && bytes[1] === 0x8b ? 'gunzip' : 'brotli';
  try {
    return await inflaters[algorithm](bytes, options);
  } catch (e) {
    throw new UnreadableNodes(e instanceof Error ? e.message : String(e));
  }
}

const ch = (c: string) => c.charCodeAt(0);
const QUOTE = ch('"');
const BACKSLASH = ch('\\');
const COMMA = ch(',');
const COLON = ch(':');
const OPEN = ch('{');
const CLOSE = ch('}');
const OPEN_LIST = ch('[');
const CLOSE_LIST = ch(']');
const MINUS = ch('-');
const PLUS = ch('+');
const DOT = ch('.');
const ZERO = ch('0');
const NINE = ch('9');
const LOWER_E = ch('e');
const UPPER_E = ch('E');
const LOWER_U = ch('u');
/** The characters that may follow a backslash in a JSON string, `u` aside. */
const ESCAPES = new Set([...'"\\/bfnrt'].map(ch));
const LITERALS = ['true', 'false', 'null'].map((s) => Buffer.from(s));

// What the scan expects next.
const VALUE = 0; // any value
const VALUE_OR_END = 1; // right after `[`
const KEY_OR_END = 2; // right after `{`
const KEY = 3; // after a comma in an object
const COLON_NEXT = 4;
const COMMA_OR_END = 5; // after a value

/**
 * scan checks `b` as one JSON object, the map of nodes, in slices, and reads what `sink` asks
 * for: members of the map are at depth 1, members of a node at depth 2.
 */
async function scan(b: Buffer, sink: NodeSink, o: DecodeOptions): Promise<void> {
  const sliceBytes = o.sliceBytes ?? SLICE_BYTES;
  const sliceTokens = o.sliceTokens ?? SLICE_TOKENS;
  const maxNodes = o.maxNodes ?? MAX_NODES;
  const n = b.length;
  const objects = new Uint8Array(MAX_DEPTH + 1); // per open container: 1 for an object, 0 for a list
  let depth = 0;
  let expect = VALUE;
  let nodes = 0;
  let id = ''; // the key of the node being read, at depth 1
  let reader: NodeReader | null = null; // the reader of the node being read
  let field: string | null = null; // the key of the node's member being read, if handed over
  let i = skipBlank(b, 0);
  if (b[i] !== OPEN) throw new UnreadableNodes('not a map of nodes once decompressed');
  let sliceEnd = i + sliceBytes;
  let tokens = 0;
  for (;;) {
    if (i >= sliceEnd || ++tokens >= sliceTokens) {
      await loopTurn();
      sliceEnd = i + sliceBytes;
      tokens = 0;
    }
    i = skipBlank(b, i);
    if (i >= n) throw notJson();
    const c = b[i]!;
    if (expect === COLON_NEXT) {
      if (c !== COLON) throw notJson();
      i++;
      expect = VALUE;
    } else if (expect === COMMA_OR_END) {
      if (c === COMMA) {
        i++;
        expect = objects[depth - 1] === 1 ? KEY : VALUE;
      } else if (c === (objects[depth - 1] === 1 ? CLOSE : CLOSE_LIST)) {
        i++;
        if (--depth === 0) break;
        if (depth === 1) {
          reader?.end(true);
          reader = null;
        }
      } else throw notJson();
    } else if (expect === KEY || expect === KEY_OR_END) {
      if (c === CLOSE && expect === KEY_OR_END) {
        i++;
        if (--depth === 0) break;
        if (depth === 1) {
          reader?.end(true);
          reader = null;
        }
        expect = COMMA_OR_END;
        continue;
      }
      if (c !== QUOTE) throw notJson();
      const end = endOfString(b, i);
      if (depth === 1) {
        if (++nodes > maxNodes) throw new UnreadableNodes(`more than ${maxNodes} nodes`);
        id = stringAt(b, i, end);
      } else if (depth === 2 && reader !== null) {
        const key = stringAt(b, i, end);
        field = sink.field(key) ? key : null;
      }
      i = end;
      expect = COLON_NEXT;
    } else if (c === CLOSE_LIST && expect === VALUE_OR_END) {
      i++;
      --depth; // a list is never the map itself
      expect = COMMA_OR_END;
    } else if (c === OPEN || c === OPEN_LIST) {
      if (depth === MAX_DEPTH) throw new UnreadableNodes(`nested more than ${MAX_DEPTH} deep`);
      if (depth === 1) {
        reader = sink.node(id);
        if (reader !== null && c === OPEN_LIST) reader.end(false);
        if (c === OPEN_LIST) reader = null;
      } else if (depth === 2 && reader !== null && field !== null) {
        reader.member(field, COMPOSITE);
      }
      objects[depth++] = c === OPEN ? 1 : 0;
      i++;
      expect = c === OPEN ? KEY_OR_END : VALUE_OR_END;
    } else {
      const end = endOfScalar(b, i);
      if (depth === 1) sink.node(id)?.end(false);
      else if (depth === 2 && reader !== null && field !== null) reader.member(field, JSON.parse(b.toString('utf8', i, end)));
      i = end;
      expect = COMMA_OR_END;
    }
  }
  if (skipBlank(b, i) !== n) throw notJson();
}

/** endOfScalar is the index after the string, number or literal that starts at `at`; throws if there is none. */
function endOfScalar(b: Buffer, at: number): number {
  const c = b[at]!;
  if (c === QUOTE) return endOfString(b, at);
  if (c === MINUS || (c >= ZERO && c <= NINE)) return endOfNumber(b, at);
  for (const literal of LITERALS) if (literal.every((byte, k) => b[at + k] === byte)) return at + literal.length;
  throw notJson();
}

/** endOfString is the index after the quote that closes the string opened at `open`; throws if the string is not JSON's. */
function endOfString(b: Buffer, open: number): number {
  const n = b.length;
  let i = open + 1;
  for (;;) {
    if (i >= n) throw notJson();
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) throw notJson();
    if (c !== BACKSLASH) {
      i++;
      continue;
    }
    const e = b[i + 1] ?? 0;
    if (ESCAPES.has(e)) i += 2;
    else if (e === LOWER_U && isHex(b[i + 2]) && isHex(b[i + 3]) && isHex(b[i + 4]) && isHex(b[i + 5])) i += 6;
    else throw notJson();
  }
}

/** endOfNumber is the index after JSON's number at `at`: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. */
function endOfNumber(b: Buffer, at: number): number {
  let i = at;
  if (b[i] === MINUS) i++;
  if (b[i] === ZERO) i++;
  else if (isDigit(b[i])) while (isDigit(b[i])) i++;
  else throw notJson();
  if (b[i] === DOT) {
    i++;
    if (!isDigit(b[i])) throw notJson();
    while (isDigit(b[i])) i++;
  }
  if (b[i] === LOWER_E || b[i] === UPPER_E) {
    i++;
    if (b[i] === PLUS || b[i] === MINUS) i++;
    if (!isDigit(b[i])) throw notJson();
    while (isDigit(b[i])) i++;
  }
  return i;
}

/** stringAt is the value of the JSON string from `open` to `end` (its quotes included), once checked. */
function stringAt(b: Buffer, open: number, end: number): string {
  for (let i = open + 1; i < end - 1; i++) if (b[i]! >= 0x80 || b[i] === BACKSLASH) return JSON.parse(b.toString('utf8', open, end)) as string;
  return b.toString('latin1', open + 1, end - 1);
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= ZERO && c <= NINE;
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66));
}

/** skipBlank is the index of the first byte at or after `from` that is not JSON whitespace. */
function skipBlank(b: Buffer, from: number): number {
  let i = from;
  for (; i < b.length; i++) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
  }
  return i;
}

function notJson(): UnreadableNodes {
  return new UnreadableNodes('not JSON once decompressed');
}
