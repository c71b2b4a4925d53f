// The variables our container takes from ConfigMaps (`envFrom`), read as the kubelet sets them:
// every key of the ConfigMap under the prefix, beneath the container's own `env`. Every route's
// container reads the install's settings so (the ConfigMap finalizer-sweeper-settings, optional),
// Argo's instance ID among them: status must read it to show the selector the controller uses.

import type { ApiClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { refusal } from '../explain/refusal.ts';
import type { FoundInstall } from './find-installs.ts';
import { launchOf, type Launch } from './install-settings.ts';

/** EnvFromSource is one entry of a container's envFrom, as the Deployment holds it. */
interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

/** ENV_FROM_UNREAD is what launchOf says of envFrom, which this reads instead. */
const ENV_FROM_UNREAD = 'envFrom is not read; the settings assume none of its variables';

/**
 * launchWithEnvFrom is launchOf with the variables of the container's envFrom ConfigMaps added
 * beneath its env. A ConfigMap that is missing and not optional keeps the pod from starting: that
 * is the launch's problem. One that cannot be read, and a Secret (status reads none), are left
 * out and said so in `unresolved`.
 */
export async function launchWithEnvFrom(client: ApiClient, install: FoundInstall, signal?: AbortSignal): Promise<Launch | { problem: string }> {
  const launch = launchOf(install);
  if ('problem' in launch) return launch;
  const sources = (install.container.envFrom ?? []) as EnvFromSource[];
  const env: Record<string, string> = {};
  const unresolved = launch.unresolved.filter((u) => u !== ENV_FROM_UNREAD);
  const ns = install.namespace;
  for (const source of sources) {
    const ref = source.configMapRef;
    if (ref === undefined) {
      unresolved.push(`the variables of ${source.secretRef === undefined ? 'an envFrom source' : `Secret ${source.secretRef.name} (envFrom)`} are not read; the settings assume none of them`);
      continue;
    }
    try {
      const cm = await client.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps/${encodeURIComponent(ref.name)}`, signal, verb: 'get', subject: { group: '', resource: 'configmaps', name: ref.name } });
      for (const [key, value] of Object.entries(cm.data ?? {})) env[`${source.prefix ?? ''}${key}`] = value;
    } catch (err) {
      if (!isNotFound(err)) unresolved.push(`the variables of ConfigMap ${ns}/${ref.name} (envFrom): ${refusal(err, 'get configmaps')}; the settings shown leave them out`);
      else if (ref.optional !== true) return { problem: `ConfigMap ${ns}/${ref.name} does not exist: the pod cannot take its environment from it` };
    }
  }
  // The container's own env wins over envFrom, as in the kubelet.
  return { ...launch, env: { ...env, ...launch.env }, unresolved };
}
