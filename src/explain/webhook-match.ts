// Which admission webhooks a pod UPDATE reaches (our removal patch, or anyone's): the API server's
// own matching (apiserver's webhook/predicates: rules, then namespaceSelector, then
// objectSelector), redone here because it happens only inside the API server and a dry run
// shows only the webhook that denied, not the ones that could. Pure; admission-webhooks.ts reads.

import { selectorMatches, selectsEverything, type LabelSelector } from './label-selector.ts';

export type WebhookKind = 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration';

/** Webhook is one entry of a configuration's `webhooks`, as admissionregistration.k8s.io/v1 sends it (the fields read). */
export interface Webhook {
  name?: string;
  clientConfig?: { url?: string | null; service?: { namespace?: string; name?: string } | null };
  rules?: Rule[] | null;
  failurePolicy?: string | null;
  namespaceSelector?: LabelSelector | null;
  objectSelector?: LabelSelector | null;
  matchConditions?: Array<{ name?: string }> | null;
}

interface Rule {
  operations?: string[] | null;
  apiGroups?: string[] | null;
  apiVersions?: string[] | null;
  resources?: string[] | null;
  scope?: string | null;
}

/** Candidate: a webhook whose rules and objectSelector take the pod's UPDATE; its namespaceSelector is matched next. */
export interface Candidate {
  kind: WebhookKind;
  configuration: string;
  webhook: Webhook;
}

/** InterceptingWebhook is a webhook the pod's UPDATE reaches, as the report lists it. */
export interface InterceptingWebhook {
  kind: WebhookKind;
  configuration: string;
  webhook: string;
  /** What the API server does when it cannot call the webhook: Fail rejects the request. */
  failurePolicy: 'Fail' | 'Ignore';
  /** The in-cluster Service it is called through; readyEndpoints null until read (or when it could not be). */
  service: { namespace: string; name: string; readyEndpoints: boolean | null } | null;
  /** Called at a URL instead (clientConfig.url), which explain does not try. */
  url: boolean;
  /** not-checked: the Namespace could not be read, so its namespaceSelector may exclude this pod. */
  namespaceSelector: 'matches' | 'not-checked';
  /** Its CEL matchConditions, by name: explain does not evaluate them, and the webhook is called only when all hold. */
  matchConditions: string[];
}

/** podUpdateCandidates: the webhooks of these configurations whose rules match a pod UPDATE and whose objectSelector the pod's labels match. */
export function podUpdateCandidates(kind: WebhookKind, configurations: readonly unknown[], podLabels: Readonly<Record<string, string>>): Candidate[] {
  const out: Candidate[] = [];
  for (const c of configurations as Array<{ metadata?: { name?: string }; webhooks?: Webhook[] | null }>) {
    for (const webhook of c.webhooks ?? []) {
      // objectSelector is matched against the old object and the new; a finalizer patch changes no label, so the pod's labels answer for both.
      if ((webhook.rules ?? []).some(matchesPodUpdate) && selectorMatches(webhook.objectSelector, podLabels)) {
        out.push({ kind, configuration: c.metadata?.name ?? '', webhook });
      }
    }
  }
  return out;
}

/** needsNamespaceLabels: some candidate's namespaceSelector has a requirement, so the Namespace must be read to match it. */
export function needsNamespaceLabels(candidates: readonly Candidate[]): boolean {
  return candidates.some((c) => !selectsEverything(c.webhook.namespaceSelector));
}

/**
 * interceptingWebhooks keeps the candidates whose namespaceSelector the namespace's labels match.
 * namespaceLabels null: the Namespace could not be read; every candidate is kept, those with a
 * namespaceSelector marked not-checked, since leaving them out could hide the one that blocks.
 */
export function interceptingWebhooks(candidates: readonly Candidate[], namespaceLabels: Readonly<Record<string, string>> | null): InterceptingWebhook[] {
  const out: InterceptingWebhook[] = [];
  for (const { kind, configuration, webhook } of candidates) {
    const everything = selectsEverything(webhook.namespaceSelector);
    if (namespaceLabels !== null && !everything && !selectorMatches(webhook.namespaceSelector, namespaceLabels)) continue;
    const service = webhook.clientConfig?.service;
    out.push({
      kind,
      configuration,
      webhook: webhook.name ?? '',
      // The API server ignores a failed call only under Ignore; unset (and anything else) fails the request.
      failurePolicy: webhook.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
      service: service === null || service === undefined ? null : { namespace: service.namespace ?? '', name: service.name ?? '', readyEndpoints: null },
      url: typeof webhook.clientConfig?.url === 'string',
      namespaceSelector: namespaceLabels === null && !everything ? 'not-checked' : 'matches',
      matchConditions: (webhook.matchConditions ?? []).map((m) => m.name ?? ''),
    });
  }
  return out;
}

/**
 * matchesPodUpdate: the rule takes an UPDATE of a pod itself (core v1 `pods`, no subresource), as
 * apiserver's rules.Matcher decides: each field exact or `*`; a resource `a/b` is resource a,
 * subresource b, and `*` as the subresource also matches none: `pods/*` takes the pod itself,
 * not only its subresources, while `pods/status` does not. v1 is the only version pods are
 * served in, so matchPolicy Equivalent adds nothing here.
 */
function matchesPodUpdate(rule: Rule): boolean {
  const scope = rule.scope ?? '*';
  if (scope !== '*' && scope !== 'Namespaced') return false;
  const any = (items: string[] | null | undefined, value: string) => (items ?? []).some((i) => i === '*' || i === value);
  if (!any(rule.operations, 'UPDATE') || !any(rule.apiGroups, '') || !any(rule.apiVersions, 'v1')) return false;
  return (rule.resources ?? []).some((r) => {
    const slash = r.indexOf('/');
    const resource = slash < 0 ? r : r.slice(0, slash);
    const sub = slash < 0 ? '' : r.slice(slash + 1);
    return (resource === '*' || resource === 'pods') && (sub === '*' || sub === '');
  });
}
