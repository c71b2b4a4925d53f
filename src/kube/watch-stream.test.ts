import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineSplitter, parseWatchEvent, watchEvents } from './watch-stream.ts';
import { ApiError, isGone } from './errors.ts';

/** text reads the splitter's lines (bytes) as strings. */
function text(lines: Buffer[]): string[] {
  return lines.map((l) => l.toString('utf8'));
}

test('a line split across chunks comes out whole, once', () => {
  const s = new LineSplitter();
  assert.deepEqual(text(s.push(Buffer.from('{"a":'))), []);
  assert.deepEqual(text(s.push(Buffer.from('1}'))), []);
  assert.deepEqual(text(s.push(Buffer.from('\n{"b":2}\n{"c"'))), ['{"a":1}', '{"b":2}']);
  assert.deepEqual(text(s.push(Buffer.from(':3}\n'))), ['{"c":3}']);
  assert.deepEqual(text(s.flush()), []);
});

test('a multi-byte character split across chunks is decoded intact', () => {
  const bytes = Buffer.from('{"name":"Zürich-✓"}\n');
  const cut = bytes.indexOf(0xc3) + 1; // inside the two-byte ü
  const s = new LineSplitter();
  assert.deepEqual(text(s.push(bytes.subarray(0, cut))), []);
  assert.deepEqual(text(s.push(bytes.subarray(cut))), ['{"name":"Zürich-✓"}']);
});

test('blank lines and CRLF endings are tolerated', () => {
  const s = new LineSplitter();
  assert.deepEqual(text(s.push(Buffer.from('\n{"a":1}\r\n\n'))), ['{"a":1}']);
});

test('a last line without a newline is returned by flush', () => {
  const s = new LineSplitter();
  assert.deepEqual(text(s.push(Buffer.from('{"a":1}\n{"b":2}'))), ['{"a":1}']);
  assert.deepEqual(text(s.flush()), ['{"b":2}']);
});

test('an event line parses into type and object', () => {
  const ev = parseWatchEvent<{ metadata: { name: string } }>('{"type":"MODIFIED","object":{"metadata":{"name":"p"}}}');
  assert.equal(ev.type, 'MODIFIED');
  assert.equal(ev.object.metadata.name, 'p');
});

test('an ERROR event with a 410 Expired Status is thrown as a gone ApiError', () => {
  const line = JSON.stringify({
    type: 'ERROR',
    object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'too old resource version: 1 (42)', reason: 'Expired', code: 410 },
  });
  assert.throws(
    () => parseWatchEvent(line),
    (err: unknown) => err instanceof ApiError && err.status === 410 && isGone(err) && /too old resource version/.test(err.message),
  );
});

test('a line that is not JSON is a clear error', () => {
  assert.throws(() => parseWatchEvent('{"type":"ADDED",'), /malformed watch event \(not JSON\)/);
});

test('an event without an object is a clear error', () => {
  assert.throws(() => parseWatchEvent('{"type":"ADDED"}'), /malformed watch event \(no object\)/);
});

test('an unknown event type is a clear error', () => {
  assert.throws(() => parseWatchEvent('{"type":"SURPRISE","object":{}}'), /unknown watch event type "SURPRISE"/);
});

test('watchEvents yields each event as soon as its line is complete', async () => {
  const seen: string[] = [];
  async function* chunks() {
    yield Buffer.from('{"type":"ADDED","object":{"n":1}}\n{"type":"DELE');
    assert.deepEqual(seen, ['ADDED'], 'the first event arrives before the second chunk is read');
    yield Buffer.from('TED","object":{"n":2}}\n');
  }
  for await (const ev of watchEvents(chunks())) seen.push(ev.type);
  assert.deepEqual(seen, ['ADDED', 'DELETED']);
});
