// Decoding status.compressedNodes without holding the event loop. Up to MAX_COMPRESSED_CHARS of
// base64 may inflate to MAX_NODES_BYTES of JSON; decoding that in one synchronous step held the
// loop for hundreds of milliseconds per Workflow, and the reads of many large Workflows that
// answer together for seconds: long enough to miss Lease renewals (renew deadline 10 s by
// default, src/leader) and to stall every worker (BENCHMARKS.md, scenario 14). So:
//   - zlib's asynchronous API inflates on libuv's thread pool, with the same output bound;
//   - the JSON is read in slices of about SLICE_CHARS, and the loop runs between two slices;
//   - one decoding runs at a time, so that one inflated map is held at a time, as before.
// Only the nodes leave this file; the rule that reads them is node-status.ts's.

import { setImmediate as loopTurn } from 'node:timers/promises';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, zstdDecompress } from 'node:zlib';

/**
 * MAX_COMPRESSED_CHARS bounds status.compressedNodes (base64): a Workflow is at most etcd's
 * request limit (1.5 MiB by default; Argo compresses past 1 MiB), so anything longer is not
 * Argo's. MAX_NODES_BYTES bounds what it may inflate to, and so the time and memory one
 * decoding takes (zlib stops at the limit).
 */
export const MAX_COMPRESSED_CHARS = 4 * 1024 * 1024;
export const MAX_NODES_BYTES = 32 * 1024 * 1024;

/**
 * SLICE_CHARS is how much JSON is parsed between two turns of the event loop: a few milliseconds
 * of work on the machines measured (scenario 14). A single node longer than that is parsed whole.
 */
export const SLICE_CHARS = 256 * 1024;

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

let previous: Promise<unknown> = Promise.resolve();

/**
 * decodeCompressedNodes decodes compressedNodes as Argo's DecompressContent does (base64, then
 * zstd or gzip by their magic bytes, anything else brotli, which has none) and hands each node
 * of the map to `each`. A node written twice may be handed twice, the one written last last, so
 * that it counts, as in JSON.parse and Go's encoding/json. Throws UnreadableNodes. Decodings
 * queue behind each other.
 */
export function decodeCompressedNodes(base64: string, each: (id: string, node: unknown) => void, sliceChars = SLICE_CHARS): Promise<void> {
  const run = previous.then(async () => eachMember(await inflate(base64), each, sliceChars));
  previous = run.catch(() => undefined);
  return run;
}

async function inflate(base64: string): Promise<string> {
  if (base64.length > MAX_COMPRESSED_CHARS) throw new UnreadableNodes(`longer than ${MAX_COMPRESSED_CHARS} characters`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) throw new UnreadableNodes('not base64');
  const bytes = Buffer.from(base64, 'base64');
  const options = { maxOutputLength: MAX_NODES_BYTES, chunkSize: CHUNK_BYTES };
  const algorithm =
    bytes[0] === 0x28 && bytes[1] === 0xb5 && bytes[2] === 0x2f && bytes[3] === 0xfd ? 'zstd' : bytes[0] === 0x1f && bytes[1] === 0x8b ? 'gunzip' : 'brotli';
  try {
    return (await inflaters[algorithm](bytes, options)).toString('utf8');
  } catch (e) {
    throw new UnreadableNodes(e instanceof Error ? e.message : String(e));
  }
}

const [QUOTE, BACKSLASH, COMMA, OPEN, CLOSE, OPEN_LIST, CLOSE_LIST] = ['"', '\\', ',', '{', '}', '[', ']'].map((c) => c.charCodeAt(0)) as [number, number, number, number, number, number, number];

/**
 * eachMember reads a JSON object member by member, in slices: it finds the commas between the
 * object's own members (tracking strings and nesting only) and parses each run of members of
 * about sliceChars with JSON.parse, which checks them. Every run holds at least one member and
 * they are joined by single commas inside one pair of braces, so the text is valid JSON exactly
 * when every run is, and nothing JSON.parse would refuse is read.
 */
async function eachMember(json: string, each: (id: string, node: unknown) => void, sliceChars: number): Promise<void> {
  let i = skipBlank(json, 0);
  if (json.charCodeAt(i) !== OPEN) throw new UnreadableNodes('not a map of nodes once decompressed');
  let start = ++i;
  let depth = 0;
  for (let first = true; ; first = false) {
    const due = start + sliceChars;
    let end = -1;
    let closed = false;
    for (; i < json.length; i++) {
      const c = json.charCodeAt(i);
      if (c === QUOTE) i = endOfString(json, i);
      else if (c === OPEN || c === OPEN_LIST) depth++;
      else if (c === CLOSE || c === CLOSE_LIST) {
        if (depth-- > 0) continue;
        if (c !== CLOSE) break;
        end = i;
        closed = true;
        break;
      } else if (c === COMMA && depth === 0 && i >= due) {
        end = i;
        break;
      }
    }
    if (end === -1) throw notJson();
    const members = json.slice(start, end);
    // `{}` has no member; anywhere else an empty run is a stray comma, which JSON.parse refuses.
    if (!(first && closed) && skipBlank(members, 0) === members.length) throw notJson();
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(`{${members}}`) as Record<string, unknown>;
    } catch {
      throw notJson();
    }
    for (const id of Object.keys(parsed)) each(id, parsed[id]);
    if (closed) {
      if (skipBlank(json, end + 1) !== json.length) throw notJson();
      return;
    }
    start = i = end + 1;
    await loopTurn();
  }
}

/** endOfString is the index of the quote that closes the string opened at `open` (or the text's length). */
function endOfString(json: string, open: number): number {
  let at = open;
  for (;;) {
    at = json.indexOf('"', at + 1);
    if (at === -1) return json.length;
    let backslashes = 0;
    while (json.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/** skipBlank is the index of the first character at or after `from` that is not JSON whitespace. */
function skipBlank(s: string, from: number): number {
  let i = from;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
  }
  return i;
}

function notJson(): UnreadableNodes {
  return new UnreadableNodes('not JSON once decompressed');
}
