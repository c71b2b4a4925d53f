// Transport: where the API server is, the TLS material to reach it, and the current auth headers.
// client-node's applyToHTTPSOptions re-reads certificate files and builds a new agent on every
// call, so it is called once for the TLS material; after that it serves only to refresh headers
// (rotating service-account tokens, exec plugins), at most once a minute or after a 401.
import type { AgentOptions, RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError } from './kubeconfig-error.ts';

/** TlsMaterial is what the HTTPS agent needs to verify the server and present a client cert. */
export type TlsMaterial = Pick<AgentOptions, 'ca' | 'cert' | 'key' | 'pfx' | 'passphrase' | 'servername' | 'rejectUnauthorized'>;

/** Transport is how ApiClient connects: server URL, TLS material, and a source of auth headers. */
export interface Transport {
  /** server is the API server's base URL, e.g. https://127.0.0.1:6443 (may carry a path prefix). */
  server: string;
  tls: TlsMaterial;
  /** headers returns the auth headers to send now (Authorization, Impersonate-User). */
  headers(): Promise<Record<string, string>>;
}

/**
 * transportFromKubeConfig reads the current context's cluster and user. Failing to obtain
 * credentials (a missing certificate file, a failing exec plugin) is a KubeConfigError with
 * exit code 3.
 */
export async function transportFromKubeConfig(kc: KubeConfig): Promise<Transport> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new KubeConfigError('the kubeconfig has no current cluster', 2);
  const opts: RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (err) {
    throw new KubeConfigError(`cannot obtain credentials for cluster "${cluster.name}": ${(err as Error).message}`, 3, { cause: err });
  }
  let first: Record<string, string> | null = headersOf(opts);
  return {
    server: cluster.server,
    tls: {
      ca: opts.ca,
      cert: opts.cert,
      key: opts.key,
      pfx: opts.pfx,
      passphrase: opts.passphrase,
      servername: opts.servername,
      rejectUnauthorized: opts.rejectUnauthorized,
    },
    async headers() {
      if (first !== null) {
        const h = first;
        first = null;
        return h;
      }
      const fresh: RequestOptions = {};
      await kc.applyToHTTPSOptions(fresh);
      return headersOf(fresh);
    },
  };
}

function headersOf(opts: RequestOptions): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    // Token files may end with a newline, which is not allowed in a header value.
    if (v !== undefined) out[k] = (Array.isArray(v) ? v.join(', ') : String(v)).trim();
  }
  if (typeof opts.auth === 'string' && opts.auth !== '') {
    out['Authorization'] = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  }
  return out;
}
