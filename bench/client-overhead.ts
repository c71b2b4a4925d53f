// What ApiClient costs per request beyond node:https itself (issue 46), with no API server: a
// local HTTPS server in a process of its own (a self-signed certificate made with openssl)
// answers every request at once with a small PartialObjectMetadata and APF's headers, and this
// process sends the bare loop's merge patch (answer drained unread) N times at 16 in flight,
// alternating between ways, and prints each way's CPU (process.cpuUsage) per request:
//   api         ApiClient.request as the controller's removal sends it (an abort signal, unread);
//   api-nosig   the same without the signal;
//   bare        node:https alone, keep-alive agent, the same headers;
//   bare-signal node:https with the signal handed to http.request, as ApiClient does;
//   bare-timeout node:https with ApiClient's per-request req.setTimeout;
//   bare-onename node:https through ApiClient's agent, which names its pool once (one-server-agent.ts).
// Medians of ten rounds; on shared cores differences under about 15 µs a request are noise.
//
// Run: sh .ci/with-node24 node --expose-gc bench/client-overhead.ts [requests per round, default 10000] [ways]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../src/kube/client.ts';
import { oneServerAgent } from '../src/kube/one-server-agent.ts';
import { mapConcurrent } from '../src/testbed/cluster.ts';
import { percentile } from './lib/stats.ts';

const N = Number(process.argv[2] ?? 10_000);
const CONCURRENCY = 16;
const ROUNDS = 10;
const ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const TOKEN = 'Bearer 0123456789abcdef0123456789abcdef';

const SERVER = `
const { createServer } = require('node:https');
const body = '{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"1"}}';
const s = createServer({ key: process.env.KEY, cert: process.env.CERT, keepAliveTimeout: 60000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
      'x-kubernetes-pf-flowschema-uid': 'f', 'x-kubernetes-pf-prioritylevel-uid': 'p' });
    res.end(body);
  });
});
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
`;

const dir = mkdtempSync(join(tmpdir(), 'client-overhead-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
const key = readFileSync(join(dir, 'key.pem'), 'utf8');
const ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
rmSync(dir, { recursive: true });
const server = spawn(process.execPath, ['-e', SERVER], { env: { ...process.env, KEY: key, CERT: ca }, stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise<string>((resolve) => server.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())));

const signal = new AbortController().signal;
const client = new ApiClient({ server: `https://127.0.0.1:${port}`, tls: { ca }, headers: async () => ({ Authorization: TOKEN }) }, { maxSockets: CONCURRENCY });
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca });
const oneName = oneServerAgent(true, { keepAlive: true, maxSockets: CONCURRENCY, ca });
const path = (i: number) => `/api/v1/namespaces/ns/pods/wf-${i}-p0`;
const patch = (i: number) => ({ metadata: { resourceVersion: String(1000 + i), finalizers: [] as string[] } });

function viaClient(i: number, withSignal: boolean): Promise<unknown> {
  return client.request({
    method: 'PATCH',
    path: path(i),
    query: { dryRun: undefined },
    body: patch(i),
    contentType: 'application/merge-patch+json',
    accept: ACCEPT,
    unread: true,
    verb: 'patch',
    subject: { group: '', resource: 'pods', name: `wf-${i}-p0` },
    ...(withSignal ? { signal } : {}),
  });
}

function bare(i: number, o: { signal?: boolean; timeout?: boolean; oneName?: boolean }): Promise<unknown> {
  const text = JSON.stringify(patch(i));
  const headers = { Authorization: TOKEN, Accept: ACCEPT, 'Accept-Encoding': 'gzip', 'Content-Type': 'application/merge-patch+json', 'Content-Length': Buffer.byteLength(text), 'User-Agent': 'bench' };
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ hostname: '127.0.0.1', port, agent: o.oneName === true ? oneName : agent, method: 'PATCH', path: path(i), headers, ...(o.signal === true ? { signal } : {}) }, (res) => {
      res.on('data', () => {});
      res.once('end', () => resolve(res.statusCode));
      res.once('error', reject);
    });
    req.once('error', reject);
    if (o.timeout === true) req.setTimeout(60_000, () => req.destroy());
    req.end(text);
  });
}

const WAYS: Record<string, (i: number) => Promise<unknown>> = {
  api: (i) => viaClient(i, true),
  'api-nosig': (i) => viaClient(i, false),
  bare: (i) => bare(i, {}),
  'bare-signal': (i) => bare(i, { signal: true }),
  'bare-timeout': (i) => bare(i, { timeout: true }),
  'bare-onename': (i) => bare(i, { oneName: true }),
};
const names = (process.argv[3] ?? Object.keys(WAYS).join(',')).split(',');
for (const name of names) if (!(name in WAYS)) throw new Error(`unknown way ${name}: one of ${Object.keys(WAYS).join(', ')}`);
const items = Array.from({ length: N }, (_, i) => i);
const gc = (globalThis as { gc?: () => void }).gc;

try {
  for (const name of names) await mapConcurrent(items.slice(0, 2_000), CONCURRENCY, WAYS[name]!); // JIT warm-up, connections opened
  const micros = new Map<string, number[]>(names.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of r % 2 === 0 ? names : [...names].reverse()) {
      gc?.();
      const start = process.cpuUsage();
      await mapConcurrent(items, CONCURRENCY, WAYS[name]!);
      const used = process.cpuUsage(start);
      micros.get(name)!.push((used.user + used.system) / N);
    }
  }
  const base = percentile(micros.get('bare') ?? [], 50);
  for (const [name, v] of micros) {
    const m = percentile(v, 50) ?? Number.NaN;
    console.log(`${name.padEnd(13)} ${m.toFixed(1).padStart(6)} µs CPU a request (median of ${ROUNDS})${base === null ? '' : `, ${(m / base).toFixed(2)} of bare`}   [${v.map((x) => x.toFixed(0)).join(' ')}]`);
  }
} finally {
  client.close();
  agent.destroy();
  oneName.destroy();
  server.kill();
}
