// A loopback proxy in front of the test API server that can answer some requests itself (a 429
// storm, an outage) and rewrite the headers of the answers it passes on. Plain HTTP towards the
// client, TLS towards the server; bodies are piped as they come, so watches stream through it.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import { Agent, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';

/** Fault is an answer the proxy gives instead of the API server's. */
export interface Fault {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface FaultProxyOptions {
  kubeconfigPath: string;
  /** context: the kubeconfig's context to use; its current one when left out. */
  context?: string;
  /** path is where the kubeconfig that goes through the proxy is written. */
  path: string;
  /** fault answers a request instead of the server, or returns null to pass it on. */
  fault?: (req: IncomingMessage) => Fault | null;
  /** headers rewrites the headers of the server's answers. */
  headers?: (h: IncomingHttpHeaders) => IncomingHttpHeaders;
  /** before runs, and is awaited, before a request is passed on: another writer slipping in between a client's read and its write. */
  before?: (req: IncomingMessage) => Promise<void>;
}

export interface FaultProxy {
  /** kubeconfigPath reaches the server through the proxy, as the identity the proxy was started for. */
  kubeconfigPath: string;
  /** url is the proxy's own address (plain HTTP). */
  url: string;
  /** faults counts the answers the proxy gave itself. */
  readonly faults: number;
  /** stall holds every new request (not sent on) until resume: a network path that went dead. */
  stall(): void;
  /** resume sends the held requests on, and new ones at once. */
  resume(): void;
  /** cut ends every answer being passed on (open watches included), as a gateway that restarts does. */
  cut(): void;
  close(): Promise<void>;
}

/** startFaultProxy proxies to the server of `kubeconfigPath`'s `context`, and writes a kubeconfig that reaches it through the proxy. */
export async function startFaultProxy(o: FaultProxyOptions): Promise<FaultProxy> {
  const kc = new KubeConfig();
  kc.loadFromFile(o.kubeconfigPath);
  if (o.context !== undefined) kc.setCurrentContext(o.context);
  const cluster = kc.getCurrentCluster();
  const token = kc.getCurrentUser()?.token;
  if (!cluster?.caData || !token) throw new Error(`${o.kubeconfigPath}: context ${kc.getCurrentContext()} needs certificate-authority-data and a token`);
  const target = new URL(cluster.server);
  const agent = new Agent({ keepAlive: true, ca: Buffer.from(cluster.caData, 'base64').toString('utf8') });
  let faults = 0;
  let held: Array<() => void> | null = null;
  const open = new Set<ServerResponse>();

  const server = createServer((req, res) => {
    if (held !== null) return void held.push(() => pass(req, res));
    if (o.before === undefined) return pass(req, res);
    o.before(req).then(
      () => pass(req, res),
      () => res.destroy(),
    );
  });
  const pass = (req: IncomingMessage, res: ServerResponse) => {
    const fault = o.fault?.(req) ?? null;
    if (fault !== null) {
      faults++;
      req.resume();
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      res.end(fault.body === undefined ? '' : JSON.stringify(fault.body));
      return;
    }
    const upstream = request(
      { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host }, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, o.headers ? o.headers(answer.headers) : answer.headers);
        // Send the headers now, as the API server does: a watch's opening is its headers, and
        // Node would hold them back until the first event.
        res.flushHeaders();
        // An answer cut short behind the proxy is cut short in front of it, as a gateway's is:
        // pipe() would leave a watch open and silent for good.
        answer.on('close', () => {
          if (!answer.complete) res.destroy();
        });
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    open.add(res);
    res.on('close', () => {
      open.delete(res);
      upstream.destroy();
    });
    req.pipe(upstream);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  await writeFile(
    o.path,
    `apiVersion: v1
kind: Config
clusters:
- name: proxied
  cluster:
    server: http://127.0.0.1:${port}
users:
- name: proxied
  user:
    token: ${token}
contexts:
- name: proxied
  context:
    cluster: proxied
    user: proxied
current-context: proxied
`,
    { mode: 0o600 },
  );
  return {
    kubeconfigPath: o.path,
    url: `http://127.0.0.1:${port}`,
    get faults() {
      return faults;
    },
    stall: () => {
      held ??= [];
    },
    resume: () => {
      const waiting = held ?? [];
      held = null;
      for (const go of waiting) go();
    },
    cut: () => {
      for (const res of open) res.destroy();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
    },
  };
}

/** tooManyRequests is a 429 as the API server gives it, asking for `retryAfterSeconds`. */
export function tooManyRequests(retryAfterSeconds: number): Fault {
  return {
    status: 429,
    headers: { 'retry-after': String(retryAfterSeconds) },
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Too many requests, please try again later.', reason: 'TooManyRequests', details: { retryAfterSeconds }, code: 429 },
  };
}
