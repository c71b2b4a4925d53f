// What the API server answered to our removal patch sent as a server-side dry run (dryRun=All):
// the same admission chain, validation and RBAC as the real write, nothing stored. Each refusal
// is named as an operator acts on it: the field that no longer validates (kubernetes #127917,
// #114366), the webhook or admission policy that denies pod UPDATEs, the RBAC verb missing.

import { ApiError, isNetworkError } from '../kube/errors.ts';

export type PatchVerdict =
  | { result: 'accepted' }
  /** 422: the pod as stored no longer validates; a finalizer patch fails until it does. */
  | { result: 'invalid'; fields: Array<{ field: string; message: string }>; message: string }
  /** An admission webhook denied the UPDATE: `webhook` is its name as the server reported it. */
  | { result: 'denied-by-webhook'; webhook: string; status: number; message: string }
  /**
   * A ValidatingAdmissionPolicy denied it: its name, the binding's, and `denial`, the policy's
   * own words (its validation's message, or why its binding could not be configured).
   */
  | { result: 'denied-by-policy'; policy: string; binding: string | null; denial: string; message: string }
  /** 403 from RBAC: the verb and resource missing. */
  | { result: 'forbidden'; verb: string; resource: string; message: string }
  /** 409: the pod changed between the read and the patch; explain again. */
  | { result: 'conflict'; message: string }
  /** 404: the pod is gone. */
  | { result: 'not-found' }
  | { result: 'failed'; status: number | null; message: string };

// apiserver's admission plugin: `admission webhook "NAME" denied the request: REASON`.
const WEBHOOK = /admission webhook "([^"]+)" denied the request/;
// apiserver's validating admission policy (k8s.io/apiserver, pkg/admission/plugin/policy/validating/
// dispatcher.go, the same words in 1.31, 1.33 and 1.37): `ValidatingAdmissionPolicy 'P' with binding 'B'
// denied request: DENIAL`, without the binding when the policy itself is broken. The Status's message
// wraps it (`pods "p" is forbidden: ...`) and one of its causes carries it bare; the code is 422
// unless the validation names a reason (403 for Forbidden). Names cannot hold a quote (DNS
// subdomains); the denial, from a messageExpression, may span lines.
const POLICY = /ValidatingAdmissionPolicy '([^']+)'(?: with binding '([^']+)')? denied request(?:: ([\s\S]*))?/;
// RBAC's forbidden message: `User "u" cannot patch resource "pods" in API group "" ...`.
const RBAC = /cannot (\w+) resource "([^"]+)"/;

/** patchVerdict reads the dry run's outcome: undefined error means accepted. */
export function patchVerdict(err?: unknown): PatchVerdict {
  if (err === undefined) return { result: 'accepted' };
  if (!(err instanceof ApiError)) {
    const message = err instanceof Error ? err.message : String(err);
    return { result: 'failed', status: null, message: isNetworkError(err) ? `no answer: ${message}` : message };
  }
  const { message } = err;
  const webhook = WEBHOOK.exec(message);
  if (webhook !== null) return { result: 'denied-by-webhook', webhook: webhook[1] as string, status: err.status, message };
  const policy = [message, ...err.causes.map((c) => c.message)].map((m) => POLICY.exec(m)).find((m) => m !== null);
  if (policy !== undefined) return { result: 'denied-by-policy', policy: policy[1] as string, binding: policy[2] ?? null, denial: (policy[3] ?? '').trim(), message };
  switch (err.status) {
    case 422:
      return { result: 'invalid', fields: err.causes.map((c) => ({ field: c.field, message: c.message })), message };
    case 403: {
      const rbac = RBAC.exec(message);
      if (rbac !== null) return { result: 'forbidden', verb: rbac[1] as string, resource: rbac[2] as string, message };
      break;
    }
    case 409:
      return { result: 'conflict', message };
    case 404:
      return { result: 'not-found' };
  }
  return { result: 'failed', status: err.status, message };
}

/** describePatchVerdict says the verdict in one line. */
export function describePatchVerdict(v: PatchVerdict): string {
  switch (v.result) {
    case 'accepted':
      return 'accepted: the API server would apply our removal patch now (dry run, nothing written)';
    case 'invalid': {
      const fields = v.fields.filter((f) => f.field !== '').map((f) => `${f.field} (${f.message})`);
      return `rejected, 422: the pod no longer validates${fields.length > 0 ? `: ${fields.join('; ')}` : `: ${v.message}`}; no finalizer patch succeeds until the field is fixed or the validation relaxed`;
    }
    case 'denied-by-webhook':
      return `denied by the admission webhook "${v.webhook}" (HTTP ${v.status}): ${v.message}`;
    case 'denied-by-policy':
      return `denied by the ValidatingAdmissionPolicy "${v.policy}"${v.binding === null ? '' : ` (binding "${v.binding}")`}: ${v.denial === '' ? v.message : v.denial}`;
    case 'forbidden':
      return `forbidden, 403: these credentials may not ${v.verb} ${v.resource}; the controller's account needs that verb too`;
    case 'conflict':
      return 'conflict, 409: the pod changed since it was read; run explain again';
    case 'not-found':
      return 'the pod is gone';
    case 'failed':
      return `failed${v.status === null ? '' : `, HTTP ${v.status}`}: ${v.message}`;
  }
}
