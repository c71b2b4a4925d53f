// The names an install's objects take from its Deployment's, and what status says of them.
//
// Two installs with the same cluster-wide names: every kustomize route names its ClusterRole and
// ClusterRoleBinding finalizer-sweeper (with the kustomization's namePrefix, if any), so a second
// install without a prefix of its own rebinds the first one's ClusterRoleBinding to its own
// account, and the first is refused (403) from then on, without a word at apply time. status
// reads the binding an install's names lead to and says so when it binds someone else.
//
// The name: an install's Deployment and its ClusterRoleBinding carry the same prefix, the
// kustomization's namePrefix or the Helm release's name: <prefix>finalizer-sweeper for our own
// Deployment, <prefix>workflow-controller for Argo's (the sidecar routes; the chart's is
// <release>-workflow-controller, its binding <release>-finalizer-sweeper).

import type { ApiClient } from '../kube/client.ts';
import { refusal } from '../explain/refusal.ts';

interface Subject { kind: string; name: string; namespace?: string }
interface ClusterRoleBinding { metadata: { name: string; labels?: Record<string, string> }; subjects?: Subject[] }

/** namePrefixOf is the prefix of an install's names, from its Deployment's; null for a Deployment no route names. */
export function namePrefixOf(deployment: string): string | null {
  return /^(.*)(finalizer-sweeper|workflow-controller)$/.exec(deployment)?.[1] ?? null;
}

/** bindingNameOf is the ClusterRoleBinding an install of this Deployment makes; null for a Deployment no route names. */
export function bindingNameOf(deployment: string): string | null {
  const prefix = namePrefixOf(deployment);
  return prefix === null ? null : `${prefix}finalizer-sweeper`;
}

/**
 * metricsServicesOf are the metrics Services an install may have, most likely first: with the
 * prefix of a kustomize namePrefix, and as every route names it (the Helm fragment's keeps its
 * name whatever the release's).
 */
export function metricsServicesOf(deployment: string): string[] {
  const prefix = namePrefixOf(deployment) ?? '';
  return [...new Set([`${prefix}finalizer-sweeper-metrics`, 'finalizer-sweeper-metrics'])];
}

/** Account is a ServiceAccount, namespace and name. */
export interface Account {
  namespace: string;
  name: string;
}

/**
 * collisionOf says what is wrong when the binding binds ServiceAccounts none of which is the
 * install's own: null when it binds it, or binds no ServiceAccount of ours (one made by hand).
 */
export function collisionOf(binding: ClusterRoleBinding, account: Account): string | null {
  const accounts = (binding.subjects ?? []).filter((s) => s.kind === 'ServiceAccount');
  if (accounts.length === 0 || accounts.some((s) => s.name === account.name && s.namespace === account.namespace)) return null;
  const others = accounts.map((s) => `${s.namespace ?? '?'}/${s.name}`).join(', ');
  return `ClusterRoleBinding ${binding.metadata.name} binds ${others}, not this install's account ${account.namespace}/${account.name}: another install with the same cluster-wide names has taken it, so this one is refused (403); give one of the two a namePrefix (docs/operations.md, "Two installs in one cluster")`;
}

/** readBindingCollision reads the install's ClusterRoleBinding, by name, and returns collisionOf it; null when there is none. */
export async function readBindingCollision(client: ApiClient, deployment: string, account: Account, unchecked: string[], signal?: AbortSignal): Promise<string | null> {
  const name = bindingNameOf(deployment);
  if (name === null) return null;
  try {
    // A list by name: the on-call role lists ClusterRoleBindings already (the guardrail's grant).
    const list = await client.request<{ items?: ClusterRoleBinding[] }>({ method: 'GET', path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', query: { fieldSelector: `metadata.name=${name}` }, signal, verb: 'list' });
    const binding = list.items?.[0];
    return binding === undefined ? null : collisionOf(binding, account);
  } catch (err) {
    unchecked.push(`whether another install took ClusterRoleBinding ${name}: ${refusal(err, 'list clusterrolebindings (rbac.authorization.k8s.io)')}`);
    return null;
  }
}
