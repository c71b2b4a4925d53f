import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { Metrics } from './metrics.ts';
import { startHealthServer, startMetricsServer, type Serving } from './server.ts';
import type { Check } from './health.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(port: number, path: string, options: { method?: string; agent?: Agent } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', agent: options.agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function serving(s: Promise<Serving | null>): Promise<Serving> {
  const server = await s;
  assert.ok(server, 'server should be enabled');
  return server;
}

test('"0" and "" disable both servers', async () => {
  const m = new Metrics({ version: 'test' });
  assert.equal(await startMetricsServer('0', m.registry), null);
  assert.equal(await startHealthServer('', { readyz: {} }), null);
});

test('/metrics serves the registry in the Prometheus text format, on an ephemeral port', async (t) => {
  const m = new Metrics({ version: 'test' });
  const s = await serving(startMetricsServer('127.0.0.1:0', m.registry));
  t.after(() => s.close());
  assert.notEqual(s.port, 0);
  m.conflict();
  const r = await get(s.port, '/metrics');
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  assert.match(r.body, /^finalizer_sweeper_conflicts_total 1$/m);
});

test('an unknown path is 404 and a POST is 405', async (t) => {
  const m = new Metrics({ version: 'test' });
  const s = await serving(startMetricsServer('127.0.0.1:0', m.registry));
  t.after(() => s.close());
  assert.equal((await get(s.port, '/nope')).status, 404);
  const post = await get(s.port, '/metrics', { method: 'POST' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, 'GET, HEAD');
});

test('/readyz is 200 when every readiness check passes', async (t) => {
  const s = await serving(startHealthServer('127.0.0.1:0', { readyz: { caches: () => true } }));
  t.after(() => s.close());
  const r = await get(s.port, '/readyz');
  assert.equal(r.status, 200);
  assert.equal(r.body, '[+]caches ok\nreadyz check passed\n');
});

test('/readyz is 500 and names the failed check, including checks added after the start', async (t) => {
  const readyz: Record<string, Check> = { caches: () => true };
  const s = await serving(startHealthServer('127.0.0.1:0', { readyz }));
  t.after(() => s.close());
  readyz.watches = () => 'pods watch restarting';
  const r = await get(s.port, '/readyz');
  assert.equal(r.status, 500);
  assert.match(r.body, /^\[-\]watches failed: pods watch restarting$/m);
});

test('/healthz reports the event loop check and is 200 while the loop keeps time', async (t) => {
  const s = await serving(startHealthServer('127.0.0.1:0', { readyz: { caches: () => false } }));
  t.after(() => s.close());
  const r = await get(s.port, '/healthz');
  assert.equal(r.status, 200, 'liveness must not depend on readiness');
  assert.match(r.body, /^\[\+\]event-loop ok$/m);
});

test('/healthz fails when an event-loop stall was seen', async (t) => {
  const s = await serving(startHealthServer('127.0.0.1:0', { readyz: {}, eventLoop: { thresholdMs: 50, intervalMs: 10, windowMs: 60_000 } }));
  t.after(() => s.close());
  const until = performance.now() + 300;
  while (performance.now() < until) { /* block the event loop on purpose */ }
  await new Promise((r) => setTimeout(r, 50)); // let the late heartbeat run
  const r = await get(s.port, '/healthz');
  assert.equal(r.status, 500);
  assert.match(r.body, /^\[-\]event-loop failed: event loop blocked for/m);
});

test('a second server on a port in use fails with the address in the message', async (t) => {
  const m = new Metrics({ version: 'test' });
  const first = await serving(startMetricsServer('127.0.0.1:0', m.registry));
  t.after(() => first.close());
  await assert.rejects(startMetricsServer(`127.0.0.1:${first.port}`, m.registry),
    new RegExp(`metrics server cannot listen on 127\\.0\\.0\\.1:${first.port}: .*EADDRINUSE`));
});

test('close resolves and ends an idle keep-alive connection', async () => {
  const m = new Metrics({ version: 'test' });
  const s = await serving(startMetricsServer('127.0.0.1:0', m.registry));
  const agent = new Agent({ keepAlive: true });
  try {
    await get(s.port, '/metrics', { agent });
    const [socket] = Object.values(agent.freeSockets).flat();
    assert.ok(socket, 'the agent should hold an idle keep-alive socket');
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await s.close();
    await closed;
  } finally {
    agent.destroy();
  }
});
