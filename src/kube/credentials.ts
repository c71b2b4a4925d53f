// loadTransport finds the cluster and the credentials for it, the way kubectl does: an explicit
// kubeconfig, else the files in KUBECONFIG (merged, first wins), else ~/.kube/config, else the
// in-cluster service account.
//
// Why not @kubernetes/client-node's KubeConfig for all of it: importing that package costs about
// 85 MiB of resident memory (measured with Node 24: 44 MiB bare, 129 MiB after the import), more
// than the whole controller needs otherwise. The kubeconfig forms that production uses (a
// service-account token, a token file, client certificates) are read here; only users with an
// `exec` or `auth-provider` plugin, which need client-node's authenticators, load it.

import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { load as parseYaml } from 'js-yaml';
import { KubeConfigError } from './kubeconfig-error.ts';
import type { TlsMaterial, Transport } from './transport.ts';

export { KubeConfigError };

/** The in-cluster service account's files, as the kubelet mounts them. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface CredentialsInput {
  kubeconfig: string | null;
  context: string | null;
  env?: Readonly<Record<string, string | undefined>>;
  home?: string;
  serviceAccountDir?: string;
}

type Entry = Record<string, unknown>;

/** A named kubeconfig entry with the folder of the file it came from (relative paths resolve there). */
interface Named {
  body: Entry;
  dir: string;
}

interface Merged {
  currentContext: string | null;
  clusters: Map<string, Named>;
  users: Map<string, Named>;
  contexts: Map<string, Named>;
  files: string[];
}

export async function loadTransport(input: CredentialsInput): Promise<Transport> {
  const env = input.env ?? process.env;
  const files = kubeconfigFiles(input, env);
  if (files.length === 0) {
    const sa = input.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
    if (env['KUBERNETES_SERVICE_HOST'] && existsSync(join(sa, 'token'))) return inCluster(env, sa, input.context);
    throw new KubeConfigError('no kubeconfig found (no --kubeconfig, KUBECONFIG unset, no ~/.kube/config) and not running in a cluster', 3);
  }
  const merged = merge(files);
  const contextName = input.context ?? merged.currentContext;
  if (contextName === null || contextName === '') throw new KubeConfigError('the kubeconfig names no current context; pass --context', 2);
  const context = merged.contexts.get(contextName);
  if (context === undefined) {
    const known = [...merged.contexts.keys()].map((n) => `"${n}"`);
    throw new KubeConfigError(`unknown context "${contextName}"; the kubeconfig has ${known.length > 0 ? known.join(', ') : 'no contexts'}`, 2);
  }
  const cluster = merged.clusters.get(str(context.body['cluster']) ?? '');
  if (cluster === undefined) throw new KubeConfigError(`context "${contextName}" names a cluster the kubeconfig does not define`, 2);
  const user = merged.users.get(str(context.body['user']) ?? '');
  if (user === undefined) throw new KubeConfigError(`context "${contextName}" names a user the kubeconfig does not define`, 2);
  if (str(cluster.body['proxy-url'])) throw new KubeConfigError(`cluster "${str(context.body['cluster'])}" sets proxy-url, which finalizer-sweeper does not support`, 2);

  if (user.body['exec'] !== undefined || user.body['auth-provider'] !== undefined) return viaClientNode(input, contextName);
  try {
    return fromEntries(cluster, user);
  } catch (err) {
    throw new KubeConfigError(`cannot obtain credentials for context "${contextName}": ${(err as Error).message}`, 3, { cause: err });
  }
}

function kubeconfigFiles(input: CredentialsInput, env: Readonly<Record<string, string | undefined>>): string[] {
  if (input.kubeconfig !== null) return [input.kubeconfig];
  const list = env['KUBECONFIG'];
  if (list) return list.split(delimiter).filter((f) => f !== '' && existsSync(f));
  const dir = input.home ?? homeOf();
  if (dir === null) return [];
  const home = join(dir, '.kube', 'config');
  return existsSync(home) ? [home] : [];
}

/**
 * homeOf: the user's home folder, or null where there is none. os.homedir() throws when HOME is
 * unset and the UID has no passwd entry, as under OpenShift's arbitrary UIDs in a runtime that
 * leaves HOME out; in a pod the in-cluster credentials are the way then, not a crash.
 */
function homeOf(): string | null {
  try {
    return homedir();
  } catch {
    return null;
  }
}

/** merge reads the files with kubectl's rule: the first file to define a name (or current-context) wins. */
function merge(files: string[]): Merged {
  const m: Merged = { currentContext: null, clusters: new Map(), users: new Map(), contexts: new Map(), files };
  for (const file of files) {
    const doc = readKubeconfig(file);
    const dir = dirname(file);
    m.currentContext ??= str(doc['current-context']) || null;
    for (const [section, key, target] of [['clusters', 'cluster', m.clusters], ['users', 'user', m.users], ['contexts', 'context', m.contexts]] as const) {
      const list = doc[section];
      if (list === undefined || list === null) continue;
      if (!Array.isArray(list)) throw new KubeConfigError(`invalid kubeconfig ${file}: ${section} is not a list`, 2);
      for (const item of list as unknown[]) {
        if (!isEntry(item) || typeof item['name'] !== 'string') throw new KubeConfigError(`invalid kubeconfig ${file}: an entry of ${section} has no name`, 2);
        if (!target.has(item['name'])) target.set(item['name'], { body: isEntry(item[key]) ? item[key] : {}, dir });
      }
    }
  }
  return m;
}

function readKubeconfig(file: string): Entry {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new KubeConfigError(`cannot read kubeconfig ${file}: ${(err as Error).message}`, 2, { cause: err });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new KubeConfigError(`invalid kubeconfig ${file}: ${(err as Error).message}`, 2, { cause: err });
  }
  if (doc === undefined || doc === null) return {};
  if (!isEntry(doc)) throw new KubeConfigError(`invalid kubeconfig ${file}: not a mapping`, 2);
  return doc;
}

function fromEntries(cluster: Named, user: Named): Transport {
  const c = cluster.body;
  const u = user.body;
  const server = str(c['server']);
  if (!server) throw new Error('the cluster has no server');
  const tls: TlsMaterial = {};
  const ca = dataOrFile(c, 'certificate-authority', cluster.dir);
  if (ca !== null) tls.ca = ca;
  if (c['insecure-skip-tls-verify'] === true) tls.rejectUnauthorized = false;
  const servername = str(c['tls-server-name']);
  if (servername) tls.servername = servername;
  const cert = dataOrFile(u, 'client-certificate', user.dir);
  const key = dataOrFile(u, 'client-key', user.dir);
  if (cert !== null) tls.cert = cert;
  if (key !== null) tls.key = key;

  const fixed: Record<string, string> = {};
  const impersonate = str(u['as']);
  if (impersonate) fixed['Impersonate-User'] = impersonate;
  const token = str(u['token']);
  const tokenFile = str(u['tokenFile']);
  const username = str(u['username']);
  if (token) fixed['Authorization'] = `Bearer ${token.trim()}`;
  else if (username) fixed['Authorization'] = `Basic ${Buffer.from(`${username}:${str(u['password']) ?? ''}`).toString('base64')}`;
  const path = tokenFile ? resolvePath(tokenFile, user.dir) : null;
  if (path !== null) readToken(path); // fail now, with exit code 3, rather than on the first request
  return {
    server,
    tls,
    // A token file is read again on each refresh: projected service-account tokens rotate.
    headers: async () => (path === null ? { ...fixed } : { ...fixed, Authorization: `Bearer ${readToken(path)}` }),
  };
}

function inCluster(env: Readonly<Record<string, string | undefined>>, dir: string, context: string | null): Transport {
  if (context !== null) throw new KubeConfigError(`--context "${context}" needs a kubeconfig; none was found (running in a cluster)`, 2);
  const host = env['KUBERNETES_SERVICE_HOST'] as string;
  const port = env['KUBERNETES_SERVICE_PORT'] || '443';
  const token = join(dir, 'token');
  try {
    return {
      server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
      tls: { ca: readFileSync(join(dir, 'ca.crt')) },
      headers: async () => ({ Authorization: `Bearer ${readToken(token)}` }),
    };
  } catch (err) {
    throw new KubeConfigError(`cannot read the service account's credentials in ${dir}: ${(err as Error).message}`, 3, { cause: err });
  }
}

/** viaClientNode takes client-node's road for users with an exec or auth-provider plugin. */
async function viaClientNode(input: CredentialsInput, context: string): Promise<Transport> {
  const [{ loadKubeConfig }, { transportFromKubeConfig }] = await Promise.all([import('./kubeconfig.ts'), import('./transport.ts')]);
  return transportFromKubeConfig(loadKubeConfig({ kubeconfig: input.kubeconfig, context }));
}

function dataOrFile(entry: Entry, field: string, dir: string): Buffer | null {
  const data = str(entry[`${field}-data`]);
  if (data) return Buffer.from(data, 'base64');
  const file = str(entry[field]);
  return file ? readFileSync(resolvePath(file, dir)) : null;
}

function readToken(path: string): string {
  return readFileSync(path, 'utf8').trim();
}

function resolvePath(path: string, dir: string): string {
  return isAbsolute(path) ? path : join(dir, path);
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function isEntry(v: unknown): v is Entry {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
