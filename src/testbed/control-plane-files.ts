// The files a control plane needs before it starts (token file, service-account key pair) and the
// kubeconfig it hands out, plus free loopback ports.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** ADMIN_USER is the token user; it is in system:masters, so RBAC lets it do everything. */
export const ADMIN_USER = 'admin';

/**
 * SERVICE_ACCOUNTS are static-token users that look like service accounts to the API server: user
 * `system:serviceaccount:NS:NAME` in groups `system:serviceaccounts` and
 * `system:serviceaccounts:NS`. API Priority and Fairness exempts the admin (system:masters) but
 * puts these under its `service-accounts` flow schema, as it does the real controller in a
 * cluster. Each has a context of its own in the kubeconfig, named by `contextOf`.
 */
export const SERVICE_ACCOUNTS = [
  { namespace: 'finalizer-sweeper', name: 'finalizer-sweeper' },
  { namespace: 'tenants', name: 'tenant' },
  { namespace: 'tenants', name: 'noisy' },
] as const;

export type ServiceAccountName = (typeof SERVICE_ACCOUNTS)[number];

/** contextOf names the kubeconfig context (and user) of a service-account identity. */
export function contextOf(sa: { namespace: string; name: string }): string {
  return `sa-${sa.namespace}-${sa.name}`;
}

/** TokenUsers are the tokens written to the token file: the admin's, and one per service account. */
export interface TokenUsers {
  admin: string;
  /** serviceAccounts maps a context name (contextOf) to its token. */
  serviceAccounts: Map<string, string>;
}

/** writeTokenFile writes a --token-auth-file with the system:masters admin and SERVICE_ACCOUNTS. */
export async function writeTokenFile(path: string): Promise<TokenUsers> {
  const newToken = (): string => randomBytes(24).toString('hex');
  const admin = newToken();
  const lines = [`${admin},${ADMIN_USER},admin-uid,"system:masters"`];
  const serviceAccounts = new Map<string, string>();
  for (const sa of SERVICE_ACCOUNTS) {
    const token = newToken();
    serviceAccounts.set(contextOf(sa), token);
    lines.push(`${token},system:serviceaccount:${sa.namespace}:${sa.name},${contextOf(sa)}-uid,"system:serviceaccounts,system:serviceaccounts:${sa.namespace}"`);
  }
  await writeFile(path, `${lines.join('\n')}\n`, { mode: 0o600 });
  return { admin, serviceAccounts };
}

/** writeServiceAccountKeys makes the RSA key pair kube-apiserver signs and checks SA tokens with. */
export async function writeServiceAccountKeys(dir: string): Promise<{ key: string; pub: string }> {
  const key = join(dir, 'sa.key');
  const pub = join(dir, 'sa.pub');
  await run('openssl', ['genrsa', '-out', key, '2048']);
  await run('openssl', ['rsa', '-in', key, '-pubout', '-out', pub]);
  return { key, pub };
}

/**
 * writeKubeconfig writes a kubeconfig whose current context is the admin token user, with one
 * more context per service-account token given (named by contextOf), and returns its path.
 */
export async function writeKubeconfig(
  path: string,
  c: { server: string; caData: string; token: string; serviceAccounts?: Map<string, string> },
): Promise<string> {
  const accounts = c.serviceAccounts ?? new Map<string, string>();
  const users = [[ADMIN_USER, c.token], ...accounts] as const;
  const text = `apiVersion: v1
kind: Config
clusters:
- name: finalizer-sweeper-test
  cluster:
    server: ${c.server}
    certificate-authority-data: ${c.caData}
users:
${users.map(([name, token]) => `- name: ${name}\n  user:\n    token: ${token}\n`).join('')}contexts:
- name: finalizer-sweeper-test
  context:
    cluster: finalizer-sweeper-test
    user: ${ADMIN_USER}
${[...accounts.keys()].map((name) => `- name: ${name}\n  context:\n    cluster: finalizer-sweeper-test\n    user: ${name}\n`).join('')}current-context: finalizer-sweeper-test
`;
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

/** freePort hands out no port below this: the well-known and registered ports other services expect. */
const LOWEST_PORT = 10_000;
/** Ports this process was handed already: no two calls return the same port. */
const handedOut = new Set<number>();

/**
 * FETCH_BLOCKED_PORTS: the Fetch standard's "bad ports" at or above LOWEST_PORT, which Node's
 * fetch (undici) refuses to connect to ("fetch failed", cause "bad port"). A control plane served
 * on one was unreachable to every fetch-based client: client-node's informers relisted for ever
 * and the argo-style reproduction froze (https://fetch.spec.whatwg.org/#port-blocking).
 */
export const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([10080]);

/**
 * freePort finds an unused port on 127.0.0.1 for a server started later, below the kernel's
 * ephemeral range where it can: a port from that range (what listen(0) hands out) can be taken
 * meanwhile as the source port of any outgoing connection, and the benchmarks make thousands (a
 * controller started in scenario 1 once failed with EADDRINUSE on its health port). Below the
 * range only another server that binds explicitly can take it. Where the range cannot be read,
 * leaves too little below it, or 20 picks there were taken, the kernel picks (listen(0)).
 */
export async function freePort(): Promise<number> {
  const below = await ephemeralRangeStart();
  const wide = below !== null && below - LOWEST_PORT >= 1_000;
  for (let attempt = 0; attempt < 40; attempt++) {
    const candidate = wide && attempt < 20 ? LOWEST_PORT + Math.floor(Math.random() * (below - LOWEST_PORT)) : 0;
    const port = await listenOn(candidate);
    if (port === null || handedOut.has(port) || FETCH_BLOCKED_PORTS.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('no free port on 127.0.0.1');
}

/** ephemeralRangeStart is the first port of Linux's ephemeral range, or null where it cannot be read. */
async function ephemeralRangeStart(): Promise<number | null> {
  try {
    const low = Number((await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST_PORT ? low : null;
  } catch {
    return null;
  }
}

/** listenOn binds the port (0: any) on 127.0.0.1 and closes it again: the port bound, or null if it was taken. */
function listenOn(port: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(bound));
    });
  });
}
