// BytePipe is a loopback TCP proxy in front of the API server that counts the bytes each way.
// TLS passes through untouched (the serving certificate names 127.0.0.1, whatever the port), so
// the count is what a client really receives on the wire: TLS records, HTTP framing, and any
// compression the client negotiated. A contender is pointed at it by a kubeconfig of its own.
import { readFile, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class BytePipe {
  /** received counts bytes from the API server to clients. */
  received = 0;
  sent = 0;
  /** down: a blackout (see blackout); connections are refused. */
  #down = false;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(server: Server) {
    this.#server = server;
  }

  /** BytePipe.start listens on 127.0.0.1 (a free port) and forwards to upstream (https://HOST:PORT). */
  static async start(upstream: string): Promise<BytePipe> {
    const target = new URL(upstream);
    const server = createServer();
    const pipe = new BytePipe(server);
    server.on('connection', (client) => {
      if (pipe.#down) return void client.destroy();
      const api = createConnection({ host: target.hostname, port: Number(target.port) });
      for (const s of [client, api]) {
        pipe.#sockets.add(s);
        s.on('close', () => pipe.#sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          api.destroy();
        });
      }
      api.on('data', (chunk: Buffer) => (pipe.received += chunk.length));
      client.on('data', (chunk: Buffer) => (pipe.sent += chunk.length));
      api.pipe(client);
      client.pipe(api);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return pipe;
  }

  get port(): number {
    const a = this.#server.address();
    return typeof a === 'object' && a !== null ? a.port : 0;
  }

  /** writeKubeconfig copies a kubeconfig with its server pointed at this pipe. */
  async writeKubeconfig(from: string, to: string, upstream: string): Promise<string> {
    const text = await readFile(from, 'utf8');
    if (!text.includes(upstream)) throw new Error(`${from} does not name ${upstream}`);
    await writeFile(to, text.replaceAll(upstream, `https://127.0.0.1:${this.port}`), { mode: 0o600 });
    return to;
  }

  /** blackout cuts every connection and refuses new ones (on), or lets them through again (off). */
  blackout(on: boolean): void {
    this.#down = on;
    if (on) for (const s of this.#sockets) s.destroy();
  }

  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
