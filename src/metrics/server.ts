// The two small HTTP servers of the controller: metrics (--metrics-bind-address, ":8080") and
// health probes (--health-probe-bind-address, ":8081"). Their defaults stay clear of Argo's own
// 9090 (metrics) and 6060 (health), so the two may share a pod.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { parseBindAddress, type BindAddress } from './bind-address.ts';
import { EventLoopWatchdog, runChecks, type Check, type WatchdogOptions } from './health.ts';

/** Serving is a listening server. */
export interface Serving {
  /** port is the bound port: the real one when the address asked for port 0. */
  readonly port: number;
  /** close stops listening and drops idle keep-alive connections at once, busy ones after a grace. */
  close(): Promise<void>;
}

interface Answer {
  status: number;
  body: string;
  contentType?: string;
}

type Route = () => Answer | Promise<Answer>;

/** CLOSE_GRACE_MS bounds how long close() waits for an in-flight request (a slow scrape). */
const CLOSE_GRACE_MS = 2_000;

/** startMetricsServer serves `registry` on /metrics; null when the address disables it ("0", ""). */
export async function startMetricsServer(address: string, registry: Registry): Promise<Serving | null> {
  const bind = parseBindAddress(address);
  if (bind === null) return null;
  return serve('metrics', bind, {
    '/metrics': async () => ({ status: 200, body: await registry.metrics(), contentType: registry.contentType }),
  });
}

export interface HealthOptions {
  /**
   * readyz are the readiness checks (e.g. caches synced, watches healthy). They are looked up on
   * each request, so checks added to this object later count too.
   */
  readyz: Record<string, Check>;
  /** healthz are extra liveness checks, beside the built-in "event-loop". */
  healthz?: Record<string, Check>;
  /** eventLoop tunes the stall detector behind /healthz. */
  eventLoop?: WatchdogOptions;
}

/** startHealthServer serves /healthz and /readyz; null when the address disables it ("0", ""). */
export async function startHealthServer(address: string, options: HealthOptions): Promise<Serving | null> {
  const bind = parseBindAddress(address);
  if (bind === null) return null;
  const watchdog = new EventLoopWatchdog(options.eventLoop);
  const live = (): Record<string, Check> => ({ 'event-loop': () => watchdog.check(), ...options.healthz });
  watchdog.start();
  try {
    const serving = await serve('health', bind, {
      '/healthz': () => checkAnswer(runChecks('healthz', live())),
      '/readyz': () => checkAnswer(runChecks('readyz', options.readyz)),
    });
    return { port: serving.port, close: () => { watchdog.stop(); return serving.close(); } };
  } catch (e) {
    watchdog.stop();
    throw e;
  }
}

function checkAnswer(report: { ok: boolean; body: string }): Answer {
  // 500 on failure, as kube-apiserver's and controller-runtime's health endpoints answer.
  return { status: report.ok ? 200 : 500, body: report.body };
}

async function serve(what: string, bind: BindAddress, routes: Record<string, Route>): Promise<Serving> {
  const server = createServer((req, res) => void answer(routes, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`${what} server cannot listen on ${show(bind)}: ${e.message}`)));
    server.listen({ host: bind.host ?? undefined, port: bind.port }, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () => new Promise<void>((resolve) => {
      const force = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS).unref();
      server.close(() => { clearTimeout(force); resolve(); });
      server.closeIdleConnections();
    }),
  };
}

async function answer(routes: Record<string, Route>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://host').pathname;
  const route = routes[path];
  let a: Answer;
  if (route === undefined) a = { status: 404, body: `not found: ${path}\n` };
  else if (req.method !== 'GET' && req.method !== 'HEAD') a = { status: 405, body: 'only GET and HEAD\n' };
  else {
    try {
      a = await route();
    } catch (e) {
      a = { status: 500, body: `${e instanceof Error ? e.message : String(e)}\n` };
    }
  }
  if (a.status === 405) res.setHeader('Allow', 'GET, HEAD');
  res.writeHead(a.status, { 'Content-Type': a.contentType ?? 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : a.body);
}

function show(bind: BindAddress): string {
  const host = bind.host === null ? '' : bind.host.includes(':') ? `[${bind.host}]` : bind.host;
  return `${host}:${bind.port}`;
}
