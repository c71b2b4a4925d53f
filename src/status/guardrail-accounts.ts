// What `status` checks of the guardrail (deploy/components/guardrail), when one is installed: the
// ServiceAccounts its grant to Argo names exist, and Argo's own account, read from Argo's
// workflow-controller Deployment, is among them. The grant is RBAC's: every ClusterRoleBinding to
// a ClusterRole named finalizer-sweeper-guardrail-argo (with any namePrefix), the component's own
// or one the operator added. Argo's account outside it means the API server refuses Argo's own
// removals of its finalizer, in every namespace the guardrail binds.

import type { ApiClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { refusal } from '../explain/refusal.ts';
import type { Deployment } from './find-installs.ts';

/** GUARDRAIL_ROLE ends the name of the ClusterRole that grants Argo `remove` (argo-access.yaml). */
export const GUARDRAIL_ROLE = 'finalizer-sweeper-guardrail-argo';
const GUARDRAIL_SELECTOR = 'app.kubernetes.io/part-of=finalizer-sweeper,app.kubernetes.io/component=guardrail';

/** ArgoController is a Deployment that runs Argo's workflow controller, and the account it runs as. */
export interface ArgoController {
  namespace: string;
  deployment: string;
  account: { namespace: string; name: string };
}

/** GuardrailEvidence is the guardrail as read, once for every install. */
export interface GuardrailEvidence {
  /** The policies found; empty: none installed (nothing else is then said). */
  policies: string[];
  /** The ServiceAccounts granted Argo's verb, each with whether it exists (null: not read). */
  granted: { namespace: string; name: string; binding: string; exists: boolean | null }[] | null;
  /** Argo's controllers among the Deployments read. */
  argo: ArgoController[];
  /** What could not be read, one line each. */
  unchecked: string[];
}

interface Subject { kind: string; name: string; namespace?: string }
interface ClusterRoleBinding { metadata: { name: string }; roleRef: { kind: string; name: string }; subjects?: Subject[] }

/** findArgoControllers picks the Deployments with a container of Argo's workflow-controller image. */
export function findArgoControllers(deployments: readonly Deployment[]): ArgoController[] {
  return deployments
    .filter((d) => (d.spec?.template?.spec?.containers ?? []).some((c) => /(^|\/)workflow-controller(:|@|$)/.test(c.image ?? '')))
    .map((d) => {
      const namespace = d.metadata.namespace ?? '';
      return { namespace, deployment: d.metadata.name, account: { namespace, name: d.spec?.template?.spec?.serviceAccountName || 'default' } };
    });
}

/** readGuardrail reads the guardrail's policies, Argo's grant and the accounts it names; `deployments` are those status listed. */
export async function readGuardrail(client: ApiClient, deployments: readonly Deployment[], signal?: AbortSignal): Promise<GuardrailEvidence> {
  const unchecked: string[] = [];
  const argo = findArgoControllers(deployments);
  let policies: string[];
  try {
    const list = await client.request<{ items?: { metadata: { name: string } }[] }>({ method: 'GET', path: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', query: { labelSelector: GUARDRAIL_SELECTOR }, signal, verb: 'list' });
    policies = (list.items ?? []).map((p) => p.metadata.name);
  } catch (err) {
    if (isNotFound(err)) return { policies: [], granted: null, argo, unchecked }; // before 1.30: no such API, so no guardrail
    return { policies: [], granted: null, argo, unchecked: [`whether the guardrail is installed: ${refusal(err, 'list validatingadmissionpolicies (admissionregistration.k8s.io)')}`] };
  }
  if (policies.length === 0) return { policies, granted: null, argo, unchecked };

  let granted: GuardrailEvidence['granted'] = null;
  try {
    const list = await client.request<{ items?: ClusterRoleBinding[] }>({ method: 'GET', path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', signal, verb: 'list' });
    granted = [];
    for (const b of list.items ?? []) {
      if (b.roleRef.kind !== 'ClusterRole' || !b.roleRef.name.endsWith(GUARDRAIL_ROLE)) continue;
      for (const s of b.subjects ?? []) {
        if (s.kind === 'ServiceAccount' && s.namespace !== undefined) granted.push({ namespace: s.namespace, name: s.name, binding: b.metadata.name, exists: await serviceAccountExists(client, s.namespace, s.name, unchecked, signal) });
      }
    }
  } catch (err) {
    unchecked.push(`the accounts the guardrail lets remove Argo's finalizer: ${refusal(err, 'list clusterrolebindings (rbac.authorization.k8s.io)')}`);
  }
  return { policies, granted, argo, unchecked };
}

async function serviceAccountExists(client: ApiClient, namespace: string, name: string, unchecked: string[], signal?: AbortSignal): Promise<boolean | null> {
  try {
    await client.request({ method: 'GET', path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}`, signal, verb: 'get' });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    unchecked.push(`ServiceAccount ${namespace}/${name}, named by the guardrail: ${refusal(err, 'get serviceaccounts')}`);
    return null;
  }
}

/** judgeGuardrail says what is wrong with the guardrail's accounts: problems (Argo refused) and warnings (a name that grants nothing). */
export function judgeGuardrail(g: GuardrailEvidence): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (g.policies.length === 0 || g.granted === null) return { problems, warnings };
  for (const a of g.argo) {
    if (g.granted.some((s) => s.namespace === a.account.namespace && s.name === a.account.name)) continue;
    const binding = g.granted[0]?.binding ?? GUARDRAIL_ROLE;
    problems.push(`the guardrail (${g.policies.join(', ')}) refuses Argo's own removals of its finalizer: Argo's workflow controller (Deployment ${a.namespace}/${a.deployment}) runs as ServiceAccount ${a.account.namespace}/${a.account.name}, which no ClusterRoleBinding to ClusterRole ${GUARDRAIL_ROLE} names; add it as a subject of ${binding} (docs/operations.md, "The guardrail")`);
  }
  for (const s of g.granted) {
    if (s.exists === false) warnings.push(`the guardrail's ClusterRoleBinding ${s.binding} names ServiceAccount ${s.namespace}/${s.name}, which does not exist: it grants nothing now, and would let a later account of that name remove Argo's finalizer; drop it unless Argo runs as it`);
  }
  if (g.granted.length === 0) problems.push(`the guardrail (${g.policies.join(', ')}) lets no ServiceAccount remove Argo's finalizer: no ClusterRoleBinding to ClusterRole ${GUARDRAIL_ROLE} names one, so Argo's own removals are refused`);
  return { problems, warnings };
}
