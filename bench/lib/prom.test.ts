// The benchmarks' figures for API requests, queue adds and conflicts are sums over scrapes of
// the controller's /metrics: these tests feed the parser the text prom-client really writes (the
// controller's own Metrics among it) and the parts of the exposition format prom-client never
// uses (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { Metrics } from '../../src/metrics/metrics.ts';
import { Scrape, scrape } from './prom.ts';

test('sums the controller\'s own API request counter, in total and by any subset of its labels', async () => {
  const metrics = new Metrics({ version: 'test' });
  for (let i = 0; i < 3; i++) metrics.apiRequest('patch', 200, 0.01, 'pods');
  metrics.apiRequest('patch', 409, 0.02, 'pods');
  metrics.apiRequest('list', 200, 0.3, 'pods');
  metrics.conflict();
  const s = new Scrape(await metrics.registry.metrics());
  assert.equal(s.sum('finalizer_sweeper_api_requests_total'), 5);
  assert.equal(s.sum('finalizer_sweeper_api_requests_total', { verb: 'patch' }), 4);
  assert.equal(s.sum('finalizer_sweeper_api_requests_total', { verb: 'patch', code: '409' }), 1);
  assert.equal(s.sum('finalizer_sweeper_api_requests_total', { verb: 'watch' }), 0);
  assert.equal(s.sum('finalizer_sweeper_conflicts_total'), 1);
  assert.ok(s.samples.some((x) => x.name === 'process_cpu_user_seconds_total'), 'the default process metrics are read too');
});

test('an asked label that a series lacks excludes it', () => {
  const s = new Scrape('a_total{verb="get"} 2\na_total 3\n');
  assert.equal(s.sum('a_total'), 5);
  assert.equal(s.sum('a_total', { verb: 'get' }), 2);
  assert.equal(s.sum('a_total', { code: '' }), 0);
});

test('label values come back unescaped: quote, backslash and newline, and braces, commas and = inside them', async () => {
  const registry = new Registry();
  const odd = 'a "b" \\c\nd}e,f="g" h';
  new Counter({ name: 'odd_total', help: 'help with "quotes" and \\ and\nnewline', labelNames: ['path', 'verb'], registers: [registry] }).inc({ path: odd, verb: 'get' }, 3);
  const text = await registry.metrics();
  assert.match(text, /path="a \\"b\\" \\\\c\\nd\}e,f=\\"g\\" h"/, 'prom-client escaped it as the format says');
  const s = new Scrape(text);
  assert.deepEqual(s.samples, [{ name: 'odd_total', labels: { path: odd, verb: 'get' }, value: 3 }]);
  assert.equal(s.sum('odd_total', { path: odd }), 3);
});

test('a histogram is read as its _bucket, _sum and _count series, buckets told apart by le', async () => {
  const registry = new Registry();
  const h = new Histogram({ name: 'wait_seconds', help: 'h', buckets: [0.1, 1], labelNames: ['reason'], registers: [registry] });
  for (const v of [0.05, 0.5, 5]) h.observe({ reason: 'orphan' }, v);
  h.observe({ reason: 'recorded' }, 0.01);
  const s = new Scrape(await registry.metrics());
  assert.equal(s.sum('wait_seconds_bucket', { reason: 'orphan', le: '0.1' }), 1);
  assert.equal(s.sum('wait_seconds_bucket', { reason: 'orphan', le: '1' }), 2);
  assert.equal(s.sum('wait_seconds_bucket', { reason: 'orphan', le: '+Inf' }), 3);
  assert.equal(s.sum('wait_seconds_bucket', { le: '+Inf' }), 4);
  assert.equal(s.sum('wait_seconds_sum', { reason: 'orphan' }), 5.55);
  assert.equal(s.sum('wait_seconds_count'), 4);
  assert.equal(s.sum('wait_seconds'), 0, 'no series has the bare name');
});

test('+Inf, -Inf and NaN are values too', async () => {
  const registry = new Registry();
  new Gauge({ name: 'g', help: 'g', registers: [registry] }).set(Infinity);
  const s = new Scrape(`${await registry.metrics()}neg -Inf\nnan NaN\n`);
  assert.equal(s.sum('g'), Infinity);
  assert.equal(s.sum('neg'), -Infinity);
  assert.ok(Number.isNaN(s.sum('nan')));
});

test('values in exponent notation are read in full, and a timestamp after the value is not part of it', () => {
  const s = new Scrape('start_seconds 1.7e+09\nreqs_total{verb="get"} 1027 1395066363000\n');
  assert.equal(s.sum('start_seconds'), 1_700_000_000);
  assert.equal(s.sum('reqs_total', { verb: 'get' }), 1027);
});

test('comments, HELP and TYPE lines and blank lines are no samples, even when they look like one', () => {
  const s = new Scrape('# HELP x_total 5\n# TYPE x_total counter\n\n# x_total 7\nx_total 1\n');
  assert.deepEqual(s.samples, [{ name: 'x_total', labels: {}, value: 1 }]);
});

test('scrape reads a /metrics endpoint over HTTP, and fails on an error status', async (t) => {
  const metrics = new Metrics({ version: 'test' });
  metrics.apiRequest('get', 200, 0.01, 'workflows');
  const text = await metrics.registry.metrics();
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  assert.equal((await scrape(`${base}/metrics`)).sum('finalizer_sweeper_api_requests_total', { verb: 'get' }), 1);
  await assert.rejects(scrape(`${base}/nothing`), /HTTP 404/);
});
