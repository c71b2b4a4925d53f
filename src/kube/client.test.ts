import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient, type ApiClientOptions } from './client.ts';
import { ApiError, isObjectNotFound, isResourceNotServed, isRetryable } from './errors.ts';
import { MetadataApi } from './metadata-api.ts';
import { UNLIMITED_BUDGET, type Answer, type Budget } from './budget.ts';
import type { Transport } from './transport.ts';

// One plain-HTTP server for the file; each test installs its own handler.
let handler: http.RequestListener = (_req, res) => res.end();
let server: http.Server;
let base = '';
before(async () => {
  server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

function transport(tokens: string[] = ['t1']): Transport & { asked: number } {
  const t = {
    server: base,
    tls: {},
    asked: 0,
    headers: async () => ({ Authorization: `Bearer ${tokens[Math.min(t.asked++, tokens.length - 1)]}` }),
  };
  return t;
}

function client(t: Transport = transport(), options: ApiClientOptions = {}): ApiClient {
  return new ApiClient(t, options);
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), 'timed out');
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c.toString()));
    req.on('end', () => resolve(s));
  });
}

test('request sends method, path, query, Accept, auth and a JSON body, and parses the answer', async (t) => {
  let seen: { method?: string; url?: string; headers?: http.IncomingHttpHeaders; body?: string } = {};
  handler = (req, res) => {
    void readBody(req).then((body) => {
      seen = { method: req.method, url: req.url, headers: req.headers, body };
      res.end('{"ok":true}');
    });
  };
  const c = client();
  t.after(() => c.close());
  const out = await c.request<{ ok: boolean }>({
    method: 'PATCH',
    path: '/api/v1/namespaces/ns/pods/p',
    query: { dryRun: 'All', skipped: undefined },
    body: { metadata: { finalizers: [] } },
    contentType: 'application/merge-patch+json',
    accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
  });
  assert.deepEqual(out, { ok: true });
  assert.equal(seen.method, 'PATCH');
  assert.equal(seen.url, '/api/v1/namespaces/ns/pods/p?dryRun=All');
  assert.equal(seen.headers?.['content-type'], 'application/merge-patch+json');
  assert.equal(seen.headers?.accept, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1');
  assert.equal(seen.headers?.authorization, 'Bearer t1');
  assert.equal(seen.body, '{"metadata":{"finalizers":[]}}');
});

test('a non-2xx answer is an ApiError carrying the Status and Retry-After', async (t) => {
  handler = (_req, res) => {
    res.writeHead(429, { 'Retry-After': '2', 'Content-Type': 'application/json' });
    res.end('{"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow down"}');
  };
  const c = client();
  t.after(() => c.close());
  await assert.rejects(c.request({ method: 'GET', path: '/x' }), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.deepEqual([err.status, err.reason, err.message, err.retryAfterSeconds], [429, 'TooManyRequests', 'slow down', 2]);
    return true;
  });
});

test('after a 401 the auth headers are refreshed and the request is sent once more', async (t) => {
  const auths: (string | undefined)[] = [];
  handler = (req, res) => {
    auths.push(req.headers.authorization);
    res.statusCode = req.headers.authorization === 'Bearer new' ? 200 : 401;
    res.end('{}');
  };
  const c = client(transport(['old', 'new']));
  t.after(() => c.close());
  await c.request({ method: 'GET', path: '/x' });
  assert.deepEqual(auths, ['Bearer old', 'Bearer new']);
});

test('a 401 that fresh headers cannot cure is returned, not retried forever', async (t) => {
  let calls = 0;
  handler = (_req, res) => {
    calls++;
    res.statusCode = 401;
    res.end('{"kind":"Status","code":401,"reason":"Unauthorized","message":"Unauthorized"}');
  };
  const c = client(transport(['same']));
  t.after(() => c.close());
  await assert.rejects(c.request({ method: 'GET', path: '/x' }), (err: unknown) => err instanceof ApiError && err.status === 401);
  assert.equal(calls, 1);
});

test('auth headers are reused until the refresh period has passed', async (t) => {
  handler = (_req, res) => res.end('{}');
  const tr = transport(['a', 'b', 'c']);
  const reusing = client(tr);
  t.after(() => reusing.close());
  for (let i = 0; i < 3; i++) await reusing.request({ method: 'GET', path: '/x' });
  assert.equal(tr.asked, 1);
  const tr2 = transport(['a', 'b', 'c']);
  const refreshing = client(tr2, { headerRefreshMs: 0 });
  t.after(() => refreshing.close());
  for (let i = 0; i < 3; i++) await refreshing.request({ method: 'GET', path: '/x' });
  assert.equal(tr2.asked, 3);
});

test('stats count requests by verb and code, and body bytes; the observer hears each one, with the resource its path names', async (t) => {
  handler = (req, res) => {
    res.statusCode = req.url === '/missing' ? 404 : 200;
    res.end('{"0123456789":1}');
  };
  const heard: string[] = [];
  const c = client(transport(), { observer: { request: (verb, code, seconds, resource) => heard.push(`${verb} ${resource} ${code} ${seconds >= 0}`) } });
  t.after(() => c.close());
  await c.request({ method: 'GET', path: '/api/v1/namespaces/a/pods', verb: 'list' });
  await c.request({ method: 'GET', path: '/apis/argoproj.io/v1alpha1/namespaces/a/workflows', verb: 'list' });
  await assert.rejects(c.request({ method: 'GET', path: '/missing' }));
  assert.deepEqual([...c.stats.requests], [['list 200', 2], ['get 404', 1]]);
  assert.equal(c.stats.bytesReceived, 3 * 16);
  assert.deepEqual(heard, ['list pods 200 true', 'list workflows 200 true', 'get  404 true']);
});

test('the observer hears why a request was answered 403: a namespace being deleted (NamespaceLifecycle) apart from a denial', async (t) => {
  const terminating = { kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403, message: 'events.events.k8s.io "e.1" is forbidden: unable to create new content in namespace ns because it is being terminated', details: { name: 'e.1', group: 'events.k8s.io', kind: 'events', causes: [{ reason: 'NamespaceTerminating', message: 'namespace ns is being terminated', field: 'metadata.namespace' }] } };
  const denied = { kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403, message: 'pods is forbidden: User "u" cannot list resource "pods"', details: { kind: 'pods' } };
  handler = (req, res) => {
    res.statusCode = req.url === '/ok' ? 200 : 403;
    res.end(JSON.stringify(req.url === '/events' ? terminating : req.url === '/ok' ? {} : denied));
  };
  const heard: string[] = [];
  const c = client(transport(), { observer: { request: () => {}, forbidden: (verb, cause) => heard.push(`${verb} ${cause}`) } });
  t.after(() => c.close());
  await assert.rejects(c.request({ method: 'POST', path: '/events', body: {}, verb: 'create' }));
  await assert.rejects(c.request({ method: 'GET', path: '/pods', verb: 'list' }));
  await assert.rejects(async () => {
    for await (const _ of c.watch({ method: 'GET', path: '/watch/pods' })) void _;
  });
  await c.request({ method: 'GET', path: '/ok' });
  assert.deepEqual(heard, ['create namespace-terminating', 'list denied', 'watch denied']);
});

test('a JSON body with characters beyond ASCII arrives whole: Content-Length counts bytes, not characters', async (t) => {
  let got = '';
  handler = (req, res) => {
    void readBody(req).then((body) => {
      got = body;
      res.end('{}');
    });
  };
  const c = client();
  t.after(() => c.close());
  const body = { metadata: { annotations: { note: 'évité — 日本' } } };
  await c.request({ method: 'PATCH', path: '/p', body });
  assert.deepEqual(JSON.parse(got), body);
});

test('an unread request drains a 2xx answer without parsing it, and still throws the Status of any other', async (t) => {
  handler = (req, res) => {
    res.statusCode = req.url === '/conflict' ? 409 : 200;
    res.end(req.url === '/conflict' ? '{"kind":"Status","reason":"Conflict","message":"stale"}' : 'not json at all');
  };
  const c = client();
  t.after(() => c.close());
  assert.equal(await c.request({ method: 'PATCH', path: '/ok', body: {}, unread: true }), undefined);
  assert.equal(c.stats.bytesReceived, 'not json at all'.length);
  await assert.rejects(c.request({ method: 'PATCH', path: '/conflict', body: {}, unread: true }), (err: unknown) => err instanceof ApiError && err.status === 409 && /stale/.test(err.message));
  // Read as usual, the same answer is parsed (and fails to be).
  await assert.rejects(c.request({ method: 'PATCH', path: '/ok', body: {} }), SyntaxError);
});

test('every request passes through the budget with its priority', async (t) => {
  handler = (req, res) => res.end(req.url === '/w' ? '' : '{}');
  const priorities: number[] = [];
  const budget: Budget = { ...UNLIMITED_BUDGET, schedule: (p, fn) => (priorities.push(p), fn()) };
  const c = client(transport(), { budget });
  t.after(() => c.close());
  await c.request({ method: 'GET', path: '/x', priority: 0 });
  await c.request({ method: 'GET', path: '/x' });
  for await (const _ of c.watch({ method: 'GET', path: '/w', priority: 2 }));
  assert.deepEqual(priorities, [0, 5, 2]);
});

test('the budget hears each answer: status, Retry-After, APF\'s headers, and whether it opened a watch', async () => {
  handler = (req, res) => {
    if (req.url === '/apf') res.writeHead(200, { 'X-Kubernetes-PF-FlowSchema-UID': 'fs-1', 'X-Kubernetes-PF-PriorityLevel-UID': 'pl-1' });
    if (req.url === '/throttled') res.writeHead(429, { 'Retry-After': '3' });
    res.end(req.url === '/w' ? '' : '{}');
  };
  const heard: Answer[] = [];
  let closed = false;
  const budget: Budget = { ...UNLIMITED_BUDGET, answered: (a) => heard.push(a), close: () => (closed = true) };
  const c = client(transport(), { budget });
  const before = performance.now();
  await c.request({ method: 'GET', path: '/apf' });
  await assert.rejects(c.request({ method: 'GET', path: '/throttled' }));
  for await (const _ of c.watch({ method: 'GET', path: '/w' }));
  assert.deepEqual(
    heard.map(({ startedAt: _, ...a }) => a),
    [
      { status: 200, retryAfterSeconds: null, flowControl: { flowSchemaUid: 'fs-1', priorityLevelUid: 'pl-1' }, longRunning: false },
      { status: 429, retryAfterSeconds: 3, flowControl: null, longRunning: false },
      { status: 200, retryAfterSeconds: null, flowControl: null, longRunning: true },
    ],
  );
  assert.ok(heard.every((a) => a.startedAt >= before && a.startedAt <= performance.now()));
  c.close();
  assert.equal(closed, true, 'closing the client closes its budget');
});

test('aborting a request rejects it with the signal reason', async (t) => {
  handler = () => {}; // never answers
  const c = client();
  t.after(() => c.close());
  const ac = new AbortController();
  const p = c.request({ method: 'GET', path: '/slow', signal: ac.signal });
  setImmediate(() => ac.abort(new Error('stop')));
  await assert.rejects(p, /stop/);
});

test("a term's end cancels its requests in flight, half-answered or not, and closes their connections", async (t) => {
  let closed = 0;
  handler = (req, res) => {
    req.socket.once('close', () => closed++);
    if (req.url === '/silent') return;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"items":['); // and never ends
  };
  const c = client();
  t.after(() => c.close());
  // As leadWhenElected hands the work its signal: the term's or the shutdown's, whichever ends first.
  const [term, shutdown] = [new AbortController(), new AbortController()];
  const signal = AbortSignal.any([term.signal, shutdown.signal]);
  const inFlight = [c.request({ method: 'GET', path: '/half', signal }), c.request({ method: 'PATCH', path: '/silent', body: {}, signal })];
  setTimeout(() => term.abort(new Error('term lost')), 50);
  await Promise.all(inFlight.map((p) => assert.rejects(p, /term lost/)));
  await until(() => closed === 2);
});

test('many requests in flight on one signal add one listener to it, gone when they are; a signal already aborted sends nothing', async (t) => {
  let received = 0;
  const held: http.ServerResponse[] = [];
  handler = (_req, res) => {
    received++;
    held.push(res);
  };
  const c = client(transport(), { maxSockets: 20 });
  t.after(() => c.close());
  const ac = new AbortController();
  const all = Promise.all(Array.from({ length: 20 }, () => c.request({ method: 'GET', path: '/x', signal: ac.signal })));
  await until(() => held.length === 20);
  assert.equal(EventEmitter.getEventListeners(ac.signal, 'abort').length, 1, 'one listener while 20 are in flight');
  for (const res of held) res.end('{}');
  await all;
  await until(() => EventEmitter.getEventListeners(ac.signal, 'abort').length === 0);
  assert.equal(received, 20);
  ac.abort(new Error('gone'));
  await assert.rejects(c.request({ method: 'PATCH', path: '/x', body: {}, signal: ac.signal }), /gone/);
  assert.equal(received, 20, 'nothing sent on an aborted signal');
});

test('a refused connection is a retryable error', async (t) => {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const c = new ApiClient({ server: `http://127.0.0.1:${port}`, tls: {}, headers: async () => ({}) });
  t.after(() => c.close());
  await assert.rejects(c.request({ method: 'GET', path: '/x' }), (err: unknown) => isRetryable(err));
});

test('a server path prefix is kept in front of every request path', async (t) => {
  let url = '';
  handler = (req, res) => {
    url = req.url ?? '';
    res.end('{}');
  };
  const c = new ApiClient({ server: `${base}/k8s/clusters/c1/`, tls: {}, headers: async () => ({}) });
  t.after(() => c.close());
  await c.request({ method: 'GET', path: '/api/v1/pods', query: { limit: 5 } });
  assert.equal(url, '/k8s/clusters/c1/api/v1/pods?limit=5');
});

test('watch yields events as the server writes them, across arbitrary chunk boundaries', async (t) => {
  handler = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD');
    setTimeout(() => res.end('IFIED","object":{"metadata":{"name":"a"}}}\n'), 20);
  };
  const c = client();
  t.after(() => c.close());
  const seen: string[] = [];
  for await (const ev of c.watch<{ metadata: { name: string } }>({ method: 'GET', path: '/w' })) seen.push(`${ev.type} ${ev.object.metadata.name}`);
  assert.deepEqual(seen, ['ADDED a', 'MODIFIED a']);
  assert.equal(c.stats.requests.get('watch 200'), 1);
});

test('a watch ERROR event is thrown as an ApiError', async (t) => {
  handler = (_req, res) => {
    res.end('{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}}\n');
  };
  const c = client();
  t.after(() => c.close());
  const consume = async () => {
    for await (const _ of c.watch({ method: 'GET', path: '/w' }));
  };
  await assert.rejects(consume(), (err: unknown) => err instanceof ApiError && err.status === 410);
});

test('a watch refused by the server throws before yielding anything', async (t) => {
  handler = (_req, res) => {
    res.statusCode = 403;
    res.end('{"kind":"Status","code":403,"reason":"Forbidden","message":"no"}');
  };
  const c = client();
  t.after(() => c.close());
  const consume = async () => {
    for await (const _ of c.watch({ method: 'GET', path: '/w' }));
  };
  await assert.rejects(consume(), (err: unknown) => err instanceof ApiError && err.status === 403);
});

test('a watch cut off by the server mid-stream fails with a retryable error', async (t) => {
  handler = (req, res) => {
    res.writeHead(200);
    res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
    setTimeout(() => req.socket.destroy(), 20);
  };
  const c = client();
  t.after(() => c.close());
  const seen: string[] = [];
  const consume = async () => {
    for await (const ev of c.watch({ method: 'GET', path: '/w' })) seen.push(ev.type);
  };
  await assert.rejects(consume(), (err: unknown) => isRetryable(err));
  assert.deepEqual(seen, ['ADDED']);
});

test('aborting a watch ends it with the signal reason', async (t) => {
  handler = (_req, res) => {
    res.writeHead(200);
    res.write('{"type":"ADDED","object":{}}\n');
  };
  const c = client();
  t.after(() => c.close());
  const ac = new AbortController();
  const consume = async () => {
    for await (const _ of c.watch({ method: 'GET', path: '/w', signal: ac.signal })) ac.abort(new Error('shutdown'));
  };
  await assert.rejects(consume(), /shutdown/);
});

test('requests ask for gzip and decode it, counting the compressed bytes; watches do not ask', async (t) => {
  const { gzipSync } = await import('node:zlib');
  const big = JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => ({ metadata: { name: `pod-${i}`, labels: { a: 'b' } } })) });
  const packed = gzipSync(big);
  const asked: string[] = [];
  handler = (req, res) => {
    asked.push(`${req.url} ${req.headers['accept-encoding'] ?? 'none'}`);
    if (req.url?.startsWith('/watch')) return void res.end('{"type":"ADDED","object":{"metadata":{"name":"p"}}}\n');
    res.setHeader('Content-Encoding', 'gzip');
    res.end(packed);
  };
  const c = client();
  t.after(() => c.close());
  assert.deepEqual(await c.request({ method: 'GET', path: '/list' }), JSON.parse(big));
  assert.equal(c.stats.bytesReceived, packed.length);
  for await (const _ of c.watch({ method: 'GET', path: '/watch' })) void _;
  assert.deepEqual(asked, ['/list gzip', '/watch none']);
});

test('a watch whose answer never opens fails as a timeout instead of holding its place for good; an open watch may stay silent', async (t) => {
  let opened = false;
  handler = (req, res) => {
    if (req.url === '/never') return; // no headers, ever
    opened = true;
    res.writeHead(200);
    res.flushHeaders();
    setTimeout(() => res.end('{"type":"ADDED","object":{}}\n'), 300); // silent well past the timeout
  };
  const c = client(transport(), { requestTimeoutMs: 100 });
  t.after(() => c.close());
  const consume = async (path: string) => {
    const seen: string[] = [];
    for await (const ev of c.watch({ method: 'GET', path })) seen.push(ev.type);
    return seen;
  };
  await assert.rejects(consume('/never'), (err: unknown) => isRetryable(err) && /no answer in 100 ms/.test((err as Error).message));
  assert.deepEqual(await consume('/quiet'), ['ADDED']);
  assert.ok(opened);
});

test('an answer that arrives in small pieces, split inside characters beyond ASCII, is decoded whole, gzipped or not', async (t) => {
  const { gzipSync } = await import('node:zlib');
  const body = JSON.stringify({ items: Array.from({ length: 300 }, (_, i) => ({ metadata: { name: `pod-${i}`, annotations: { note: 'évité — 日本 🚀' } } })) });
  const plain = Buffer.from(body);
  const packed = gzipSync(body);
  handler = (req, res) => {
    const bytes = req.url === '/gzip' ? packed : plain;
    if (req.url === '/gzip') res.setHeader('Content-Encoding', 'gzip');
    // 7-byte writes: every multi-byte character of the text is split somewhere.
    const write = (at: number): void => {
      if (at >= bytes.length) return void res.end();
      res.write(bytes.subarray(at, at + 7), () => write(at + 7));
    };
    write(0);
  };
  const c = client();
  t.after(() => c.close());
  assert.deepEqual(await c.request({ method: 'GET', path: '/plain' }), JSON.parse(body));
  assert.deepEqual(await c.request({ method: 'GET', path: '/gzip' }), JSON.parse(body));
  assert.equal(c.stats.bytesReceived, plain.length + packed.length);
});

test('a gzipped answer cut short or corrupt fails the request', async (t) => {
  const { gzipSync } = await import('node:zlib');
  const packed = gzipSync(JSON.stringify({ items: [] }));
  handler = (_req, res) => {
    res.setHeader('Content-Encoding', 'gzip');
    res.end(Buffer.concat([packed.subarray(0, 10), Buffer.from('not gzip at all')]));
  };
  const c = client();
  t.after(() => c.close());
  await assert.rejects(c.request({ method: 'GET', path: '/bad' }));
});

test('an owner read answered 404 by a gateway (HTML, plain text, a Status naming something else) is never "absent"; the API server\'s own Status is', async (t) => {
  const WORKFLOWS = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows' };
  const answers: Array<[string, string, string, boolean]> = [
    ['text/html', '<html><head><title>404 Not Found</title></head><body>nginx</body></html>', 'an HTML page', false],
    ['text/plain', '404 page not found', 'plain text', false],
    ['application/json', JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'the server could not find the requested resource', details: {} }), 'the resource not served', false],
    ['application/json', JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'not found', details: { kind: 'workflows', group: 'argoproj.io' } }), 'a Status without the name', false],
    ['application/json', JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'workflows.argoproj.io "other" not found', details: { name: 'other', kind: 'workflows', group: 'argoproj.io' } }), 'a Status naming another Workflow', false],
    ['application/json', JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'workflows.argoproj.io "wf" not found', details: { name: 'wf', kind: 'workflows', group: 'argoproj.io' } }), 'the API server naming the Workflow', true],
  ];
  const c = client();
  t.after(() => c.close());
  const api = new MetadataApi(c, WORKFLOWS);
  for (const [type, body, what, absent] of answers) {
    handler = (_req, res) => {
      res.writeHead(404, { 'content-type': type });
      res.end(body);
    };
    if (absent) {
      assert.equal(await api.get('ns', 'wf'), null, what);
      continue;
    }
    const err = await api.get('ns', 'wf').then(() => null, (e: unknown) => e);
    assert.ok(isResourceNotServed(err) && !isObjectNotFound(err), `${what}: thrown as not served, not read as absent`);
    await assert.rejects(api.patchMerge('ns', 'wf', {}), (e: unknown) => isResourceNotServed(e), `${what}: a patch too`);
  }
});
