// Node's HTTPS agent names the socket pool a request goes to from the request's host, port and
// every TLS option (https.Agent.prototype.getName): the CA, the client certificate and key are
// made strings (a Buffer in base64) and joined, three times a request (queued, freed, removed),
// and the name, over a kilobyte with a CA in it, is then looked up as a property key each time.
// ApiClient's agents reach one server with one set of TLS options, so that name never changes:
// it is made once per host and port and handed back as it is.
import * as http from 'node:http';
import * as https from 'node:https';

/** oneServerAgent is a keep-alive agent (HTTPS when `secure`) whose pool name is made once per host and port. */
export function oneServerAgent(secure: boolean, options: https.AgentOptions): http.Agent {
  return secure ? new OneServerHttps(options) : new OneServerHttp(options);
}

class OneServerHttps extends https.Agent {
  readonly #names = new NameCache();
  override getName(options: https.RequestOptions = {}): string {
    return this.#names.of(options, () => super.getName(options));
  }
}

class OneServerHttp extends http.Agent {
  readonly #names = new NameCache();
  override getName(options: http.ClientRequestArgs = {}): string {
    return this.#names.of(options, () => super.getName(options));
  }
}

/**
 * NameCache keeps the name made for the first host and port. The TLS options are the agent's own,
 * the same on every request; a request to another host or port (none of ApiClient's) is named
 * afresh, as Node would.
 */
class NameCache {
  #host: unknown = undefined;
  #port: unknown = undefined;
  #name: string | null = null;

  of(options: { host?: string | null | undefined; port?: number | string | null | undefined }, make: () => string): string {
    if (this.#name !== null && options.host === this.#host && options.port === this.#port) return this.#name;
    const name = make();
    if (this.#name === null) {
      this.#host = options.host;
      this.#port = options.port;
      this.#name = name;
    }
    return name;
  }
}
