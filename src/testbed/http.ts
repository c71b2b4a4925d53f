// A small keep-alive HTTPS client for the test bed. It is deliberately independent of src/kube:
// the test bed checks the product's API layer, so it must not be built on it.
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request } from 'node:https';

/** Connection is what a client needs to reach an API server. */
export interface Connection {
  server: string;
  token: string;
  /** PEM of the serving certificate's CA, base64-encoded as in a kubeconfig. */
  caData: string;
}

/** ApiError is a non-2xx answer from the API server. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly body: unknown;

  constructor(method: string, path: string, status: number, body: unknown) {
    const st = body as { reason?: string; message?: string } | null;
    super(`${method} ${path}: ${status} ${st?.reason ?? ''} ${st?.message ?? ''}`.trim());
    this.name = 'ApiError';
    this.status = status;
    this.reason = st?.reason ?? '';
    this.body = body;
  }
}

/** WatchEvent is one line of a watch stream; an ERROR event's object is a Status (410: relist). */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: unknown;
}

/**
 * REQUEST_TIMEOUT_MS bounds a request from sending to the answer's end. Without it a request that
 * lost its connection unseen waits for good; and since a request queued for one of the agent's
 * sockets holds no handle of its own, a process left with only such requests exits as if done
 * (exit 13, "unsettled top-level await"): a 200,000-pod benchmark ended so, half-way through
 * creating its pods. The timer is a handle: such a request now fails, and says so.
 */
const REQUEST_TIMEOUT_MS = 120_000;

/** ApiClient sends JSON requests with a bearer token over a pool of keep-alive connections. */
export class ApiClient {
  readonly connection: Connection;
  #agent: Agent;
  readonly #maxSockets: number;
  readonly #ca: string;

  constructor(connection: Connection, maxSockets = 32) {
    this.connection = connection;
    this.#ca = Buffer.from(connection.caData, 'base64').toString('utf8');
    this.#maxSockets = maxSockets;
    this.#agent = new Agent({ keepAlive: true, maxSockets });
  }

  /** call sends one request and returns the parsed body; non-2xx answers throw ApiError. */
  async call<T = unknown>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const { status, json } = await this.raw(method, path, body, contentType);
    if (status < 200 || status > 299) throw new ApiError(method, path, status, json);
    return json as T;
  }

  /** raw sends one request and returns the status, headers and parsed body, whatever the status. */
  raw(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; json: unknown; headers: IncomingHttpHeaders }> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const url = new URL(path, this.connection.server);
    return new Promise((resolve, reject) => {
      const agent = this.#agent;
      const timer = setTimeout(() => {
        const connected = req.socket !== null && req.socket !== undefined;
        // Never given a connection: the pool counts sockets it no longer has. Later requests get a
        // fresh pool; those queued on this one time out in turn.
        if (!connected && this.#agent === agent) {
          this.#agent = new Agent({ keepAlive: true, maxSockets: this.#maxSockets });
          agent.destroy();
        }
        req.destroy(new Error(`${method} ${path}: no answer in ${REQUEST_TIMEOUT_MS} ms (${connected ? 'on a connection' : 'never given a connection'})`));
      }, REQUEST_TIMEOUT_MS);
      const fail = (err: unknown): void => {
        clearTimeout(timer);
        reject(err);
      };
      const req = request(
        url,
        {
          method,
          agent,
          ca: this.#ca,
          headers: {
            authorization: `Bearer ${this.connection.token}`,
            accept: 'application/json',
            ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', fail);
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, json: parse(text), headers: res.headers });
          });
        },
      );
      req.on('error', fail);
      req.end(payload);
    });
  }

  /**
   * watch sends a watch request (path with `watch=1`) and hands each event, one JSON object a line,
   * to onEvent; resolves when the server ends the stream or signal aborts. A non-2xx answer
   * rejects with ApiError.
   */
  watch(path: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const url = new URL(path, this.connection.server);
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        { method: 'GET', agent: this.#agent, ca: this.#ca, signal, headers: { authorization: `Bearer ${this.connection.token}`, accept: 'application/json' } },
        (res) => {
          let partial = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            const lines = (partial + chunk).split('\n');
            partial = lines.pop() ?? '';
            if (res.statusCode !== 200) return void (partial = lines.join('\n') + partial);
            for (const line of lines) if (line.trim() !== '') onEvent(JSON.parse(line) as WatchEvent);
          });
          res.on('error', () => resolve());
          res.on('close', () => resolve());
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new ApiError('GET', path, res.statusCode ?? 0, parse(partial)))));
        },
      );
      req.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
      req.end();
    });
  }

  /** close drops the pooled connections. */
  close(): void {
    this.#agent.destroy();
  }
}

function parse(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
