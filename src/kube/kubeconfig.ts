// Finding the cluster with client-node's KubeConfig: an explicit kubeconfig file, else its
// default search (KUBECONFIG, then ~/.kube/config, then the in-cluster service account). The
// controller and the sweep come here only for exec and auth-provider users (see credentials.ts).
import { accessSync, constants } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError } from './kubeconfig-error.ts';

export { KubeConfigError };

/**
 * loadKubeConfig loads the kubeconfig and selects the context. With `kubeconfig` that file is
 * read; otherwise KUBECONFIG (a list of files, merged), then ~/.kube/config, then the in-cluster
 * service account. With `context` that context is selected; otherwise the file's current one.
 */
export function loadKubeConfig(opts: { kubeconfig: string | null; context: string | null }): KubeConfig {
  const kc = new KubeConfig();
  if (opts.kubeconfig !== null) loadFile(kc, opts.kubeconfig);
  else loadDefault(kc);

  if (opts.context !== null) {
    if (kc.getContextObject(opts.context) === null) {
      const known = kc.getContexts().map((c) => c.name);
      throw new KubeConfigError(
        `unknown context "${opts.context}"; the kubeconfig has ${known.length ? known.map((n) => `"${n}"`).join(', ') : 'no contexts'}`,
        2,
      );
    }
    kc.setCurrentContext(opts.context);
  }
  if (!kc.getCurrentContext()) {
    throw new KubeConfigError('the kubeconfig names no current context; pass --context', 2);
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null) {
    throw new KubeConfigError(`context "${kc.getCurrentContext()}" names a cluster the kubeconfig does not define`, 2);
  }
  if (kc.getCurrentUser() === null) {
    throw new KubeConfigError(`context "${kc.getCurrentContext()}" names a user the kubeconfig does not define`, 2);
  }
  if (cluster.proxyUrl) {
    throw new KubeConfigError(`cluster "${cluster.name}" sets proxy-url, which finalizer-sweeper does not support`, 2);
  }
  return kc;
}

function loadFile(kc: KubeConfig, file: string): void {
  try {
    accessSync(file, constants.R_OK);
  } catch (err) {
    throw new KubeConfigError(`cannot read kubeconfig ${file}: ${(err as Error).message}`, 2, { cause: err });
  }
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new KubeConfigError(`invalid kubeconfig ${file}: ${(err as Error).message}`, 2, { cause: err });
  }
}

function loadDefault(kc: KubeConfig): void {
  try {
    kc.loadFromDefault();
  } catch (err) {
    throw new KubeConfigError(`cannot load the default kubeconfig (KUBECONFIG or ~/.kube/config): ${(err as Error).message}`, 2, { cause: err });
  }
  // With nothing found, client-node falls back to an unauthenticated http://localhost:8080
  // (a long-gone insecure port): say so instead of failing later with a connection error.
  if (kc.getCurrentContext() === 'loaded-context' && kc.getCurrentCluster()?.server === 'http://localhost:8080') {
    throw new KubeConfigError(
      'no kubeconfig found (no --kubeconfig, KUBECONFIG unset, no ~/.kube/config) and not running in a cluster',
      3,
    );
  }
}
