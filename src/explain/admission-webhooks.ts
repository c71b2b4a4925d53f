// readAdmissionWebhooks reads which admission webhooks a pod UPDATE reaches in the pod's
// namespace, and whether each one's Service has an endpoint ready to answer: a webhook that fails
// closed with nobody behind it rejects every finalizer removal there, ours and every other
// party's, whatever the dry run of ours says today. A few reads: the two configuration lists,
// the Namespace only when some namespaceSelector asks about it, one EndpointSlice list per
// Service. A refused read leaves a line in `unchecked`; what it would have told is marked unknown.

import type { ApiClient } from '../kube/client.ts';
import { refusal } from './refusal.ts';
import { interceptingWebhooks, needsNamespaceLabels, podUpdateCandidates, type Candidate, type InterceptingWebhook, type WebhookKind } from './webhook-match.ts';

/** AdmissionEvidence is what was read; null from readAdmissionWebhooks when no configuration could be listed. */
export interface AdmissionEvidence {
  /** The configuration kinds listed; a kind missing here could not be (its line is in `unchecked`). */
  checked: WebhookKind[];
  /** Mutating before validating, each kind in name order: the order the API server calls them. */
  webhooks: InterceptingWebhook[];
}

const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const KINDS: Array<{ kind: WebhookKind; resource: string }> = [
  { kind: 'MutatingWebhookConfiguration', resource: 'mutatingwebhookconfigurations' },
  { kind: 'ValidatingWebhookConfiguration', resource: 'validatingwebhookconfigurations' },
];

export async function readAdmissionWebhooks(client: ApiClient, namespace: string, podLabels: Readonly<Record<string, string>>, unchecked: string[]): Promise<AdmissionEvidence | null> {
  const checked: WebhookKind[] = [];
  const candidates: Candidate[] = [];
  for (const { kind, resource } of KINDS) {
    try {
      const list = await client.request<{ items?: unknown[] | null }>({ method: 'GET', path: `${ADMISSION}/${resource}`, verb: 'list' });
      checked.push(kind);
      candidates.push(...podUpdateCandidates(kind, list.items ?? [], podLabels));
    } catch (err) {
      unchecked.push(`the admission webhooks of the ${kind}s: ${refusal(err, `list ${resource}.admissionregistration.k8s.io`)}`);
    }
  }
  if (checked.length === 0) return null;
  const namespaceLabels = needsNamespaceLabels(candidates) ? await readNamespaceLabels(client, namespace, unchecked) : {};
  const webhooks = interceptingWebhooks(candidates, namespaceLabels);
  const ready = new Map<string, boolean | null>(); // one read per Service, however many webhooks it serves
  for (const w of webhooks) {
    const s = w.service;
    if (s === null) continue;
    const key = `${s.namespace}/${s.name}`;
    if (!ready.has(key)) ready.set(key, await readyEndpoints(client, s.namespace, s.name, unchecked));
    s.readyEndpoints = ready.get(key) ?? null;
  }
  return { checked, webhooks };
}

/** readNamespaceLabels: the Namespace's labels (the API server sets kubernetes.io/metadata.name), or null when it cannot be read. */
async function readNamespaceLabels(client: ApiClient, namespace: string, unchecked: string[]): Promise<Record<string, string> | null> {
  try {
    const ns = await client.request<{ metadata?: { labels?: Record<string, string> } }>({ method: 'GET', path: `/api/v1/namespaces/${encodeURIComponent(namespace)}`, verb: 'get' });
    return ns.metadata?.labels ?? {};
  } catch (err) {
    unchecked.push(`the namespace's labels, for the webhooks' namespaceSelectors: ${refusal(err, 'get namespaces')}`);
    return null;
  }
}

/**
 * readyEndpoints: whether any EndpointSlice of the Service has an endpoint that is not known
 * unready and has an address, that is, somewhere the API server can send the call. A Service
 * that does not exist has no slices: also false. null when the slices cannot be listed.
 */
async function readyEndpoints(client: ApiClient, namespace: string, name: string, unchecked: string[]): Promise<boolean | null> {
  try {
    const list = await client.request<{ items?: Array<{ endpoints?: Array<{ addresses?: string[] | null; conditions?: { ready?: boolean | null } }> | null }> | null }>({
      method: 'GET',
      path: `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/endpointslices`,
      query: { labelSelector: `kubernetes.io/service-name=${name}` },
      verb: 'list',
    });
    // An unset ready condition means ready: discovery.k8s.io/v1 says consumers should read it so.
    return (list.items ?? []).some((slice) => (slice.endpoints ?? []).some((e) => e.conditions?.ready !== false && (e.addresses ?? []).length > 0));
  } catch (err) {
    unchecked.push(`whether the webhook Service ${namespace}/${name} has ready endpoints: ${refusal(err, 'list endpointslices.discovery.k8s.io')}`);
    return null;
  }
}
