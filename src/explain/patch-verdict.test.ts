import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../kube/errors.ts';
import { describePatchVerdict, patchVerdict } from './patch-verdict.ts';

const status = (code: number, reason: string, message: string, details?: unknown) => ApiError.fromStatus({ kind: 'Status', code, reason, message, details }, code);

test('no error: accepted', () => {
  assert.deepEqual(patchVerdict(), { result: 'accepted' });
});

test('422 names each field that no longer validates', () => {
  const v = patchVerdict(status(422, 'Invalid', 'Pod "p" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified', {
    name: 'p', kind: 'Pod', causes: [{ reason: 'FieldValueForbidden', message: 'Forbidden: existing toleration can not be modified', field: 'spec.tolerations' }],
  }));
  assert.equal(v.result, 'invalid');
  assert.match(describePatchVerdict(v), /^rejected, 422: the pod no longer validates: spec.tolerations \(Forbidden: existing toleration can not be modified\)/);
});

test("a webhook's denial names the webhook, whatever code it chose", () => {
  for (const code of [400, 403]) {
    const v = patchVerdict(status(code, 'Forbidden', 'admission webhook "deny-pod-updates.example.com" denied the request: pods are frozen'));
    assert.deepEqual(v, { result: 'denied-by-webhook', webhook: 'deny-pod-updates.example.com', status: code, message: 'admission webhook "deny-pod-updates.example.com" denied the request: pods are frozen' });
  }
});

// The API server's Status for a policy's denial: the message wrapped by admission.NewForbidden,
// the bare one as a cause, the code from the validation's reason (422 Invalid unless it names one).
const policyDenial = (code: number, reason: string, bare: string) =>
  status(code, reason, `pods "p" is forbidden: ${bare}`, { name: 'p', kind: 'pods', causes: [{ message: bare }] });

const POLICY_DENIALS: Array<[string, ReturnType<typeof status>, { policy: string; binding: string | null; denial: string }]> = [
  ['403, the reason Forbidden that the guardrail names',
    policyDenial(403, 'Forbidden', "ValidatingAdmissionPolicy 'finalizer-sweeper-guardrail' with binding 'finalizer-sweeper-guardrail' denied request: user \"jane\" may not remove the finalizer"),
    { policy: 'finalizer-sweeper-guardrail', binding: 'finalizer-sweeper-guardrail', denial: 'user "jane" may not remove the finalizer' }],
  ['422 Invalid, the default reason: a policy, not a field that no longer validates',
    policyDenial(422, 'Invalid', "ValidatingAdmissionPolicy 'freeze' with binding 'freeze-all' denied request: frozen"),
    { policy: 'freeze', binding: 'freeze-all', denial: 'frozen' }],
  ['a binding that cannot be configured',
    policyDenial(422, 'Invalid', "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
    { policy: 'p', binding: 'b', denial: 'failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction' }],
  ['a broken policy, named without a binding',
    policyDenial(422, 'Invalid', "ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: paramKind kind `v1, Kind=ConfigMap` not yet synced"),
    { policy: 'p', binding: null, denial: 'failed to configure policy: paramKind kind `v1, Kind=ConfigMap` not yet synced' }],
  ['a messageExpression over several lines',
    policyDenial(403, 'Forbidden', "ValidatingAdmissionPolicy 'p.example.com' with binding 'b-1' denied request: first line\nsecond line"),
    { policy: 'p.example.com', binding: 'b-1', denial: 'first line\nsecond line' }],
  ['the wrapped message reworded (a proxy), the bare one still among the causes',
    status(403, 'Forbidden', 'request refused', { causes: [{ message: "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no" }] }),
    { policy: 'p', binding: 'b', denial: 'no' }],
];

for (const [name, err, want] of POLICY_DENIALS) {
  test(`a ValidatingAdmissionPolicy's denial names the policy, its binding and its own words: ${name}`, () => {
    const v = patchVerdict(err);
    assert.equal(v.result, 'denied-by-policy');
    assert.deepEqual({ policy: v.policy, binding: v.binding, denial: v.denial }, want);
    assert.equal(v.message, err.message);
  });
}

test("a policy's denial is said once: its names, then its own words", () => {
  const v = patchVerdict(POLICY_DENIALS[0]?.[1]);
  assert.equal(describePatchVerdict(v), 'denied by the ValidatingAdmissionPolicy "finalizer-sweeper-guardrail" (binding "finalizer-sweeper-guardrail"): user "jane" may not remove the finalizer');
  assert.equal(describePatchVerdict(patchVerdict(POLICY_DENIALS[3]?.[1])), 'denied by the ValidatingAdmissionPolicy "p": failed to configure policy: paramKind kind `v1, Kind=ConfigMap` not yet synced');
});

test('a warning of a policy in Warn mode, or a 403 merely quoting a name, is no denial by it', () => {
  assert.equal(patchVerdict(status(403, 'Forbidden', 'pods "p" is forbidden: User "jane" cannot patch resource "pods" in API group "" in the namespace "ns"')).result, 'forbidden');
  assert.equal(patchVerdict(status(403, 'Forbidden', "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': no")).result, 'failed');
});

test('403 from RBAC names the verb missing', () => {
  const v = patchVerdict(status(403, 'Forbidden', 'pods "p" is forbidden: User "jane" cannot patch resource "pods" in API group "" in the namespace "ns"'));
  assert.deepEqual({ ...v, message: undefined }, { result: 'forbidden', verb: 'patch', resource: 'pods', message: undefined });
  assert.match(describePatchVerdict(v), /may not patch pods/);
});

test('409, 404, other answers and no answer', () => {
  assert.equal(patchVerdict(status(409, 'Conflict', 'the object has been modified')).result, 'conflict');
  assert.equal(patchVerdict(status(404, 'NotFound', 'pods "p" not found')).result, 'not-found');
  assert.deepEqual(patchVerdict(status(500, 'InternalError', 'etcd timed out')), { result: 'failed', status: 500, message: 'etcd timed out' });
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  assert.deepEqual(patchVerdict(refused), { result: 'failed', status: null, message: 'no answer: connect ECONNREFUSED 127.0.0.1:1' });
});
