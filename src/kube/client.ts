// ApiClient: JSON over HTTP/1.1 keep-alive to the API server, every call through the one Budget.
// Requests share one agent sized for the workers' concurrency; watches get an agent of their own,
// because each holds its socket for minutes and must never take one a patch is waiting for.
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import * as http from 'node:http';
import * as https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { UNLIMITED_BUDGET, type Budget, type FlowControl } from './budget.ts';
import { ApiError, forbiddenCause, retryAfterHeaderSeconds, type ForbiddenCause, type Subject } from './errors.ts';
import { transportFromKubeConfig, type Transport } from './transport.ts';
import { watchEvents, type WatchEvent } from './watch-stream.ts';
import { resourceOfPath } from './api-path.ts';
import { AbortFanout } from './abort-fanout.ts';
import { oneServerAgent } from './one-server-agent.ts';

/** RequestObserver hears of every finished request (watches: when the stream opens). */
export interface RequestObserver {
  /**
   * request: verb is e.g. "list", "watch", "get", "patch"; code the HTTP status or "<error>";
   * resource what the path names ("pods", "namespaces"; "" for discovery: api-path.ts).
   */
  request(verb: string, code: string, seconds: number, resource: string): void;
  /**
   * forbidden: a request answered 403, and why: `namespace-terminating` (a create in a namespace
   * being deleted, which no permission changes) or `denied` (RBAC, an admission policy).
   */
  forbidden?(verb: string, cause: ForbiddenCause): void;
}

export interface ApiClientOptions {
  budget?: Budget;
  observer?: RequestObserver;
  /** maxSockets bounds concurrent non-watch requests (default 32). */
  maxSockets?: number;
  /** headerRefreshMs: how long auth headers are reused before asking the kubeconfig again (60 s). */
  headerRefreshMs?: number;
  /** requestTimeoutMs: a request (a watch: until it opens) silent this long fails with ETIMEDOUT (60 s). */
  requestTimeoutMs?: number;
  userAgent?: string;
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export interface RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
  /** priority in the budget, 0 (most urgent) to 9; default 5. */
  priority?: number;
  /** verb labels the request in stats and metrics; default the lower-case method. */
  verb?: string;
  /**
   * unread: a 2xx answer is drained without being decompressed or parsed, and the request
   * resolves to undefined. For writes whose answer nobody reads: the watch brings the new object.
   */
  unread?: boolean;
  /** text: a 2xx answer resolves to its body as text, unparsed (a pod's /metrics through the API server's proxy). */
  text?: boolean;
  /** subject: the one object the request is about; only a 404 naming it reads as "not found" (errors.ts). */
  subject?: Subject;
  /** onOpen: for a watch, called once its answer opens with 2xx, before any event arrives. */
  onOpen?: () => void;
}

/** ClientStats are running totals since the client was made. */
export interface ClientStats {
  /** requests counts requests by "verb code", e.g. "patch 409". */
  readonly requests: Map<string, number>;
  /** bytesReceived counts response body bytes (watch streams included). */
  bytesReceived: number;
}

const DEFAULT_PRIORITY = 5;

/** ApiClient is the only code that talks to the API server. */
export class ApiClient {
  readonly stats: ClientStats = { requests: new Map(), bytesReceived: 0 };
  readonly #transport: Transport;
  /** The server's parts of every request's target, worked out once. */
  readonly #prefix: string;
  readonly #server: { protocol: string; hostname: string; port: string };
  readonly #lib: typeof http | typeof https;
  readonly #agent: http.Agent;
  readonly #watchAgent: http.Agent;
  readonly #budget: Budget;
  readonly #observer: RequestObserver | undefined;
  readonly #refreshMs: number;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  /** Cancels requests by their signal, one listener per signal (abort-fanout.ts). */
  readonly #cancels = new AbortFanout();
  #headers: Promise<Record<string, string>> | null = null;
  #headersAt = 0;

  /** ApiClient.fromKubeConfig builds a client for the kubeconfig's current context. */
  static async fromKubeConfig(kc: KubeConfig, options: ApiClientOptions = {}): Promise<ApiClient> {
    return new ApiClient(await transportFromKubeConfig(kc), options);
  }

  constructor(transport: Transport, options: ApiClientOptions = {}) {
    this.#transport = transport;
    const base = new URL(transport.server);
    this.#prefix = base.pathname.replace(/\/$/, '');
    // A bracketed IPv6 literal must lose its brackets as a hostname.
    this.#server = { protocol: base.protocol, hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'), port: base.port };
    const secure = base.protocol === 'https:';
    this.#lib = secure ? https : http;
    const common = { keepAlive: true, ...transport.tls };
    this.#agent = oneServerAgent(secure, { ...common, maxSockets: options.maxSockets ?? 32 });
    this.#watchAgent = oneServerAgent(secure, common);
    this.#budget = options.budget ?? UNLIMITED_BUDGET;
    this.#observer = options.observer;
    this.#refreshMs = options.headerRefreshMs ?? 60_000;
    this.#timeoutMs = options.requestTimeoutMs ?? 60_000;
    this.#userAgent = options.userAgent ?? 'finalizer-sweeper';
  }

  /** request sends one request and parses the JSON answer; a non-2xx answer throws ApiError. */
  async request<T>(opts: RequestOptions): Promise<T> {
    const verb = opts.verb ?? opts.method.toLowerCase();
    return this.#budget.schedule(
      opts.priority ?? DEFAULT_PRIORITY,
      async () => {
        const start = performance.now();
        let code = '<error>';
        try {
          const res = await this.#send(opts, this.#agent);
          code = String(res.statusCode);
          this.#answered(res, start, false);
          if (opts.unread === true && ok(res)) return (await this.#drain(res)) as T;
          const text = await this.#readText(res);
          if (!ok(res)) throw errorOf(res, text, opts.subject);
          if (opts.text === true) return text as T;
          return (text.length === 0 ? undefined : JSON.parse(text)) as T;
        } catch (err) {
          this.#refused(verb, err);
          if (opts.signal?.aborted) throw opts.signal.reason;
          throw err;
        } finally {
          this.#record(verb, opts.path, code, start);
        }
      },
      opts.signal,
    );
  }

  /**
   * watch opens a watch and yields its events as they arrive. An ERROR event is thrown as an
   * ApiError (410 Expired: relist); the generator returns when the server ends the stream.
   * Breaking out of the loop or aborting the signal closes the connection.
   */
  async *watch<T>(opts: RequestOptions): AsyncGenerator<WatchEvent<T>> {
    const verb = opts.verb ?? 'watch';
    const res = await this.#budget.schedule(
      opts.priority ?? DEFAULT_PRIORITY,
      async () => {
        const start = performance.now();
        let code = '<error>';
        try {
          const r = await this.#send(opts, this.#watchAgent, true);
          code = String(r.statusCode);
          this.#answered(r, start, true);
          if (!ok(r)) throw errorOf(r, await this.#readText(r), opts.subject);
          return r;
        } catch (err) {
          this.#refused(verb, err);
          throw err;
        } finally {
          this.#record(verb, opts.path, code, start);
        }
      },
      opts.signal,
    );
    try {
      opts.onOpen?.();
      yield* watchEvents<T>(this.#counted(res));
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw err;
    } finally {
      res.destroy();
    }
  }

  /** close drops every connection (in-flight requests fail) and stops the budget's timers. */
  close(): void {
    this.#agent.destroy();
    this.#watchAgent.destroy();
    this.#budget.close();
  }

  /** #answered tells the budget how the server answered: the status, Retry-After and APF's headers. */
  #answered(res: http.IncomingMessage, startedAt: number, longRunning: boolean): void {
    this.#budget.answered({
      status: res.statusCode ?? 0,
      startedAt,
      retryAfterSeconds: retryAfterHeaderSeconds(headerOf(res, 'retry-after')),
      flowControl: flowControlOf(res),
      longRunning,
    });
  }

  /** #send sends the request, refreshing the auth headers and trying once more after a 401. */
  async #send(opts: RequestOptions, agent: http.Agent, streaming = false): Promise<http.IncomingMessage> {
    const auth = await this.#authHeaders(false);
    const res = await this.#sendOnce(opts, agent, auth, streaming);
    if (res.statusCode !== 401) return res;
    const fresh = await this.#authHeaders(true);
    if (sameHeaders(auth, fresh)) return res;
    res.resume();
    return this.#sendOnce(opts, agent, fresh, streaming);
  }

  #sendOnce(opts: RequestOptions, agent: http.Agent, auth: Record<string, string>, streaming: boolean): Promise<http.IncomingMessage> {
    const body = encodeBody(opts.body);
    const headers: Record<string, string> = { ...auth, Accept: opts.accept ?? 'application/json', 'User-Agent': this.#userAgent };
    // Lists are large and compress well; the API server gzips answers over 128 KB when asked.
    // Watch streams are not compressed by the server, so they do not ask.
    if (!streaming) headers['Accept-Encoding'] = 'gzip';
    if (body !== null) {
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const signal = opts.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const req = this.#lib.request(
        { ...this.#target(opts.path, opts.query), method: opts.method, headers, agent },
        (res) => {
          // A watch may then stay silent for minutes (the reflector's watchdog judges that).
          if (streaming) req.setTimeout(0);
          resolve(res);
        },
      );
      req.on('error', (err) => reject(signal?.aborted ? signal.reason : err));
      // The signal is not given to http.request, which would add a listener to it per request.
      if (signal !== undefined) this.#cancels.add(signal, req);
      // A request, or a watch until its answer opens, that stays silent fails: a watch's opening
      // holds a place in the API budget, and one that never opened would hold it for good.
      req.setTimeout(this.#timeoutMs, () => req.destroy(Object.assign(new Error(`no answer in ${this.#timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      req.end(body ?? undefined);
    });
  }

  #target(path: string, query: Query | undefined): { protocol: string; hostname: string; port: string; path: string } {
    let qs = '';
    if (query !== undefined) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
      qs = q.toString();
    }
    return { ...this.#server, path: `${this.#prefix}${path}${qs ? `?${qs}` : ''}` };
  }

  #authHeaders(force: boolean): Promise<Record<string, string>> {
    const now = Date.now();
    if (this.#headers === null || force || now - this.#headersAt >= this.#refreshMs) {
      const previous = this.#headers;
      this.#headersAt = now;
      // A failed refresh keeps the previous headers: a flaky exec plugin must not stop traffic
      // while the old token still works; it is asked again on the next request.
      this.#headers = this.#transport.headers().catch((err: unknown) => {
        this.#headersAt = 0;
        if (previous === null) {
          this.#headers = null;
          throw err;
        }
        return previous;
      });
    }
    return this.#headers;
  }

  /**
   * #readText reads the whole answer as text, decompressing it as it arrives and counting the
   * bytes received. Text joined by V8, not one Buffer: a list page is about 1.2 MB, and a Buffer
   * that size is malloc'd outside V8's heap; once glibc has freed such a block it raises its mmap
   * threshold and serves the next ones from its own heap, which it seldom gives back (scenario 5,
   * started without the Deployment's MALLOC_MMAP_THRESHOLD_: 107 MB against 90 with it). Here no
   * block is larger than a socket read or zlib's 16 KB output. Plain stream events: an async
   * iterator costs a few promises per chunk, on every request.
   */
  #readText(res: http.IncomingMessage): Promise<string> {
    return new Promise((resolve, reject) => {
      const decoder = new StringDecoder('utf8');
      let text = '';
      const gunzip = res.headers['content-encoding'] === 'gzip' ? createGunzip() : null;
      res.on('data', (chunk: Buffer) => {
        this.stats.bytesReceived += chunk.length;
        if (gunzip === null) text += decoder.write(chunk);
        else gunzip.write(chunk);
      });
      res.once('error', reject);
      if (gunzip === null) {
        res.once('end', () => resolve(text + decoder.end()));
        return;
      }
      gunzip.on('data', (out: Buffer) => (text += decoder.write(out)));
      gunzip.once('end', () => resolve(text + decoder.end()));
      gunzip.once('error', reject);
      res.once('end', () => gunzip.end());
    });
  }

  /** #drain reads an answer to its end unread, counting its bytes. */
  #drain(res: http.IncomingMessage): Promise<undefined> {
    return new Promise((resolve, reject) => {
      res.on('data', (chunk: Buffer) => (this.stats.bytesReceived += chunk.length));
      res.once('end', () => resolve(undefined));
      res.once('error', reject);
    });
  }

  async *#counted(res: http.IncomingMessage): AsyncGenerator<Buffer> {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      this.stats.bytesReceived += chunk.length;
      yield chunk;
    }
  }

  #refused(verb: string, err: unknown): void {
    const cause = forbiddenCause(err);
    if (cause !== null) this.#observer?.forbidden?.(verb, cause);
  }

  #record(verb: string, path: string, code: string, start: number): void {
    const key = `${verb} ${code}`;
    this.stats.requests.set(key, (this.stats.requests.get(key) ?? 0) + 1);
    this.#observer?.request(verb, code, (performance.now() - start) / 1000, resourceOfPath(path));
  }
}

/**
 * flowControlOf reads API Priority and Fairness's classification of the request, which every
 * request it handles is answered with (k8s.io/apiserver, filters/priority-and-fairness.go).
 */
function flowControlOf(res: http.IncomingMessage): FlowControl | null {
  const flowSchemaUid = headerOf(res, 'x-kubernetes-pf-flowschema-uid');
  const priorityLevelUid = headerOf(res, 'x-kubernetes-pf-prioritylevel-uid');
  if (flowSchemaUid === null && priorityLevelUid === null) return null;
  return { flowSchemaUid: flowSchemaUid ?? '', priorityLevelUid: priorityLevelUid ?? '' };
}

function headerOf(res: http.IncomingMessage, name: string): string | null {
  const v = res.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

function ok(res: http.IncomingMessage): boolean {
  return res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
}

function errorOf(res: http.IncomingMessage, text: string, subject: Subject | undefined): ApiError {
  const retryAfter = res.headers['retry-after'] ?? null;
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { message: text.slice(0, 500) };
  }
  return ApiError.fromStatus(parsed, res.statusCode ?? 0, retryAfter, subject);
}

/**
 * encodeBody: JSON stays a string, because Node writes a string body and the headers in one
 * write when the request ends with it, where a Buffer goes out in a second (a writev of two).
 */
function encodeBody(body: unknown): Buffer | string | null {
  if (body === undefined || body === null) return null;
  if (Buffer.isBuffer(body) || typeof body === 'string') return body;
  return JSON.stringify(body);
}

function sameHeaders(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
