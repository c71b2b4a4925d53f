// HTTP/2 against HTTP/1.1 for the bare merge-patch loop (issue 46): does one multiplexed
// connection, as client-go uses, cost the client less CPU per patch than a pool of keep-alive
// HTTP/1.1 sockets? It starts a control plane of its own (Kubernetes as found by the test bed),
// creates the pods once, then patches every pod once per pass, the passes alternating between
// the ways of talking to the server, at each concurrency:
//   api-h1   the product's ApiClient (HTTP/1.1 keep-alive agent), each request with an abort signal as
//            the controller's patches carry (no budget, no observer);
//   bare-h1  node:https alone with a keep-alive agent: the HTTP/1.1 transport without ApiClient;
//   bare-h2  node:http2 alone, one session (ALPN h2) for the patches and the watch.
// Each pass is ceiling.ts's loop: one JSON merge patch per pod carrying the resourceVersion it was
// computed from, the answer (metadata only, gzip accepted) drained unread. Passes toggle the
// finalizer off and on so that the same pods serve every pass; the resourceVersions come from an
// untimed metadata-only list before each pass. A watch on the pods (metadata only, parsed line
// by line), opened on the pass's own transport, is open during every pass, since the controller
// always has one; a pass ends when every patch is answered and the watch has seen each change.
// Per pass it prints the rate and this process's CPU (process.cpuUsage) and the API server's per
// 1,000 patches; at the end the medians per way and concurrency, side by side.
//
// Run: sh .ci/with-node24 node --expose-gc bench/http2-vs-http1.ts [--pods 3000] [--env-kb 20] [--rounds 3] [--concurrency 8,16]
//        [--ways api-h1,bare-h1,bare-h2] [--profile DIR]
// --profile writes a V8 CPU profile of each timed pass into DIR (passes untimed are not profiled);
// the profiler costs CPU of its own, so figures of a profiled run are not for comparing.
import { constants as h2c, connect, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { Agent, request as httpsRequest } from 'node:https';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ApiClient } from '../src/kube/client.ts';
import { MetadataApi, PODS } from '../src/kube/metadata-api.ts';
import type { MetaObject } from '../src/kube/objects.ts';
import { LineSplitter, parseWatchEvent } from '../src/kube/watch-stream.ts';
import { Cluster, mapConcurrent } from '../src/testbed/cluster.ts';
import { startControlPlane } from '../src/testbed/control-plane.ts';
import { ARGO_FINALIZER } from '../src/testbed/fixtures.ts';
import { cpuSecondsOf } from './lib/child.ts';
import { createPodSet } from './lib/populate.ts';
import { percentile } from './lib/stats.ts';

const { values: flags } = parseArgs({
  options: {
    pods: { type: 'string', default: '3000' },
    'env-kb': { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8,16' },
    ways: { type: 'string', default: 'api-h1,bare-h1,bare-h2' },
    profile: { type: 'string' },
  },
});
const PODS_WANTED = Number(flags.pods);
const ENV_KB = Number(flags['env-kb']);
const ROUNDS = Number(flags.rounds);
const CONCURRENCIES = flags.concurrency.split(',').map(Number);
const NAMESPACE = 'h2-bench';
const ACCEPT_ONE = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const MERGE_PATCH = 'application/merge-patch+json';
const WATCH_WAIT_MS = 60_000;
const PROFILE_DIR = flags.profile;

interface Server {
  server: string;
  ca: string;
  token: string;
}

/** Way is one way of talking to the API server, opened for one pass. */
interface Way {
  /** send sends one request (a merge patch if body is given), drains the answer unread and resolves to the status. */
  send(path: string, body?: object): Promise<number>;
  /** watch opens a metadata-only watch on the pods from `resourceVersion`; onChange hears each MODIFIED event. */
  watch(resourceVersion: string, onChange: () => void): Promise<() => void>;
  close(): void;
}

const WAYS: Record<string, (s: Server, concurrency: number) => Way> = {
  'api-h1': apiClientWay,
  'bare-h1': bareH1Way,
  'bare-h2': bareH2Way,
};

function podPath(name?: string, query = ''): string {
  return `/api/v1/namespaces/${NAMESPACE}/pods${name === undefined ? '' : `/${name}`}${query}`;
}

/** LEADING stands for the controller's signal, which every removal's patch carries (aborted when leadership ends). */
const LEADING = new AbortController().signal;

function apiClientWay(s: Server, concurrency: number): Way {
  const headers = { Authorization: `Bearer ${s.token}` };
  const client = new ApiClient({ server: s.server, tls: { ca: s.ca }, headers: async () => headers }, { maxSockets: concurrency, userAgent: 'bench-h1' });
  const api = new MetadataApi(client, PODS);
  return {
    async send(path, body) {
      const write = body !== undefined;
      await client.request({ method: write ? 'PATCH' : 'GET', path, body, contentType: MERGE_PATCH, accept: ACCEPT_ONE, unread: true, verb: write ? 'patch' : 'get', signal: LEADING });
      return 200;
    },
    async watch(resourceVersion, onChange) {
      const stop = new AbortController();
      let opened!: () => void;
      const open = new Promise<void>((r) => (opened = r));
      void (async () => {
        try {
          for await (const ev of api.watch(NAMESPACE, { resourceVersion, allowWatchBookmarks: true, onOpen: opened }, stop.signal)) {
            if (ev.type === 'MODIFIED') onChange();
          }
        } catch (err) {
          if (!stop.signal.aborted) console.error(`api-h1 watch: ${String(err)}`);
        }
      })();
      await open;
      return () => stop.abort();
    },
    close: () => client.close(),
  };
}

/** watchLines feeds a watch answer's body through the product's line splitter and parser. */
function watchLines(body: NodeJS.ReadableStream, onChange: () => void): void {
  const splitter = new LineSplitter();
  body.on('data', (chunk: Buffer) => {
    for (const line of splitter.push(chunk)) if (parseWatchEvent<MetaObject>(line).type === 'MODIFIED') onChange();
  });
}

function bareH1Way(s: Server, concurrency: number): Way {
  const url = new URL(s.server);
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: s.ca });
  const watchAgent = new Agent({ keepAlive: true, ca: s.ca });
  const auth = `Bearer ${s.token}`;
  const target = { hostname: url.hostname, port: url.port };
  return {
    send(path, body) {
      const text = body === undefined ? '' : JSON.stringify(body);
      const headers: Record<string, string | number> = { Authorization: auth, Accept: ACCEPT_ONE, 'Accept-Encoding': 'gzip', 'User-Agent': 'bench-h1' };
      if (body !== undefined) Object.assign(headers, { 'Content-Type': MERGE_PATCH, 'Content-Length': Buffer.byteLength(text) });
      return new Promise((resolve, reject) => {
        const req = httpsRequest(
          { ...target, agent, method: body === undefined ? 'GET' : 'PATCH', path, headers },
          (res) => {
            res.on('data', () => {});
            res.once('end', () => resolve(res.statusCode ?? 0));
            res.once('error', reject);
          },
        );
        req.once('error', reject);
        req.end(body === undefined ? undefined : text);
      });
    },
    watch(resourceVersion, onChange) {
      return new Promise((resolve, reject) => {
        const req = httpsRequest(
          { ...target, agent: watchAgent, method: 'GET', path: podPath(undefined, `?watch=true&allowWatchBookmarks=true&resourceVersion=${resourceVersion}`), headers: { Authorization: auth, Accept: ACCEPT_ONE, 'User-Agent': 'bench-h1' } },
          (res) => {
            watchLines(res, onChange);
            resolve(() => req.destroy());
          },
        );
        req.once('error', reject);
        req.end();
      });
    },
    close() {
      agent.destroy();
      watchAgent.destroy();
    },
  };
}

function bareH2Way(s: Server): Way {
  const session: ClientHttp2Session = connect(s.server, { ca: s.ca });
  session.on('error', (err) => console.error(`h2 session: ${String(err)}`));
  session.once('connect', () => {
    if (session.alpnProtocol !== 'h2') console.error(`h2 session: ALPN chose ${String(session.alpnProtocol)}`);
  });
  const auth = `Bearer ${s.token}`;
  return {
    send(path, body) {
      const headers: Record<string, string> = {
        [h2c.HTTP2_HEADER_METHOD]: body === undefined ? 'GET' : 'PATCH',
        [h2c.HTTP2_HEADER_PATH]: path,
        authorization: auth,
        accept: ACCEPT_ONE,
        'accept-encoding': 'gzip',
        'user-agent': 'bench-h2',
      };
      if (body !== undefined) headers['content-type'] = MERGE_PATCH;
      return new Promise((resolve, reject) => {
        const stream = session.request(headers);
        let status = 0;
        stream.once('response', (h: IncomingHttpHeaders) => (status = Number(h[h2c.HTTP2_HEADER_STATUS])));
        stream.on('data', () => {});
        stream.once('end', () => resolve(status));
        stream.once('error', reject);
        stream.end(body === undefined ? undefined : JSON.stringify(body));
      });
    },
    watch(resourceVersion, onChange) {
      return new Promise((resolve, reject) => {
        const stream = session.request({
          [h2c.HTTP2_HEADER_METHOD]: 'GET',
          [h2c.HTTP2_HEADER_PATH]: podPath(undefined, `?watch=true&allowWatchBookmarks=true&resourceVersion=${resourceVersion}`),
          authorization: auth,
          accept: ACCEPT_ONE,
          'user-agent': 'bench-h2',
        });
        stream.once('response', () => {
          watchLines(stream, onChange);
          resolve(() => stream.close(h2c.NGHTTP2_CANCEL));
        });
        stream.once('error', reject);
        stream.end();
      });
    },
    close: () => session.close(),
  };
}

interface Pass {
  way: string;
  concurrency: number;
  patches: number;
  failed: number;
  seconds: number;
  cpuPerThousand: number;
  serverCpuPerThousand: number;
}

function median(values: number[]): number {
  return percentile(values, 50) ?? Number.NaN;
}

const gc = (globalThis as { gc?: () => void }).gc;

/** Profiler writes a V8 CPU profile of each timed pass (DIR/WAY-cN-I.cpuprofile) when --profile is given. */
class Profiler {
  readonly #session = new Session();
  #connected = false;
  #count = 0;

  async start(): Promise<void> {
    if (PROFILE_DIR === undefined) return;
    if (!this.#connected) {
      this.#session.connect();
      await this.#session.post('Profiler.enable');
      await this.#session.post('Profiler.setSamplingInterval', { interval: 200 });
      this.#connected = true;
    }
    await this.#session.post('Profiler.start');
  }

  async stop(way: string, concurrency: number): Promise<void> {
    if (PROFILE_DIR === undefined) return;
    const { profile } = await this.#session.post('Profiler.stop');
    await writeFile(join(PROFILE_DIR, `${way}-c${concurrency}-${this.#count++}.cpuprofile`), JSON.stringify(profile));
  }
}

const profiler = new Profiler();

async function runPass(s: Server, lister: MetadataApi, apiserverPid: number, wayName: string, concurrency: number, profiled = false): Promise<Pass> {
  const pods: MetaObject[] = [];
  let resourceVersion = '';
  for (let token: string | null = null; ; ) {
    const page = await lister.list(NAMESPACE, { limit: 500, ...(token === null ? {} : { continue: token }) });
    pods.push(...page.items);
    resourceVersion = page.resourceVersion;
    token = page.continue;
    if (token === null) break;
  }
  const way = (WAYS[wayName] as (s: Server, c: number) => Way)(s, concurrency);
  let changes = 0;
  let caughtUp: (() => void) | null = null;
  const stopWatch = await way.watch(resourceVersion, () => {
    if (++changes >= pods.length) caughtUp?.();
  });
  // Connections are opened outside the timed window (one read per slot): a pass measures steady
  // patching, as a controller's long-lived connections do, not TLS handshakes.
  await mapConcurrent(pods.slice(0, concurrency), concurrency, (p) => way.send(podPath(p.metadata.name)));
  gc?.();
  if (profiled) await profiler.start();
  const cpu0 = process.cpuUsage();
  const server0 = cpuSecondsOf(apiserverPid) ?? 0;
  const t0 = performance.now();
  let failed = 0;
  await mapConcurrent(pods, concurrency, async (p) => {
    const held = p.metadata.finalizers?.includes(ARGO_FINALIZER) === true;
    const status = await way.send(podPath(p.metadata.name), { metadata: { resourceVersion: p.metadata.resourceVersion, finalizers: held ? [] : [ARGO_FINALIZER] } });
    if (status < 200 || status > 299) failed++;
  });
  if (changes < pods.length - failed) {
    await Promise.race([new Promise<void>((r) => (caughtUp = r)), new Promise((r) => setTimeout(r, WATCH_WAIT_MS).unref())]);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const serverCpu = (cpuSecondsOf(apiserverPid) ?? 0) - server0;
  if (profiled) await profiler.stop(wayName, concurrency);
  stopWatch();
  way.close();
  if (changes < pods.length - failed) console.error(`${wayName}: the watch saw ${changes} of ${pods.length - failed} changes`);
  const n = pods.length;
  return { way: wayName, concurrency, patches: n, failed, seconds, cpuPerThousand: ((cpu.user + cpu.system) / 1e6 / n) * 1000, serverCpuPerThousand: (serverCpu / n) * 1000 };
}

function row(p: Pass): string {
  return `${p.way.padEnd(8)} c=${String(p.concurrency).padEnd(3)} ${(p.patches / p.seconds).toFixed(0).padStart(5)} patches/s  client ${p.cpuPerThousand.toFixed(3)} CPU-s/1000  apiserver ${p.serverCpuPerThousand.toFixed(3)} CPU-s/1000${p.failed ? `  (${p.failed} failed)` : ''}`;
}

const plane = await startControlPlane();
try {
  console.log(`kube-apiserver ${plane.serverVersion}; ${PODS_WANTED} pods of ${ENV_KB} KB; node ${process.version}${gc ? '' : ' (no --expose-gc: no collection between passes)'}`);
  const s: Server = { server: plane.server, ca: Buffer.from(plane.caData, 'base64').toString('utf8'), token: plane.token };
  const cluster = new Cluster({ server: plane.server, token: plane.token, caData: plane.caData });
  await createPodSet(cluster, { namespace: NAMESPACE, workflows: Math.ceil(PODS_WANTED / 5), podsPerWorkflow: 5, envKB: ENV_KB });
  cluster.client.close();
  const listerClient = new ApiClient({ server: s.server, tls: { ca: s.ca }, headers: async () => ({ Authorization: `Bearer ${s.token}` }) });
  const lister = new MetadataApi(listerClient, PODS);
  const apiserverPid = plane.pids[1] as number;
  const names = flags.ways.split(',');
  for (const name of names) if (!(name in WAYS)) throw new Error(`unknown way ${name}: one of ${Object.keys(WAYS).join(', ')}`);
  // One untimed pass of each way first: JIT warm-up, and the server's caches.
  for (const name of names) await runPass(s, lister, apiserverPid, name, CONCURRENCIES[0] as number);
  const passes: Pass[] = [];
  for (const c of CONCURRENCIES) {
    for (let r = 0; r < ROUNDS; r++) {
      for (const name of r % 2 === 0 ? names : [...names].reverse()) {
        const p = await runPass(s, lister, apiserverPid, name, c, true);
        passes.push(p);
        console.log(row(p));
      }
    }
  }
  listerClient.close();
  console.log('\nmedians (same run, alternating passes; absolute rates move with the machine\'s other load, ratios less):');
  for (const c of CONCURRENCIES) {
    const baseWay = names.includes('bare-h1') ? 'bare-h1' : (names[0] as string);
    const base = median(passes.filter((p) => p.way === baseWay && p.concurrency === c).map((p) => p.cpuPerThousand));
    for (const name of names) {
      const mine = passes.filter((p) => p.way === name && p.concurrency === c);
      const cpu = median(mine.map((p) => p.cpuPerThousand));
      const rate = median(mine.map((p) => p.patches / p.seconds));
      const server = median(mine.map((p) => p.serverCpuPerThousand));
      console.log(`${name.padEnd(8)} c=${String(c).padEnd(3)} ${rate.toFixed(0).padStart(5)} patches/s  client ${cpu.toFixed(3)} CPU-s/1000 (${(cpu / base).toFixed(2)} of ${baseWay})  apiserver ${server.toFixed(3)} CPU-s/1000`);
    }
  }
} finally {
  await plane.stop();
}
