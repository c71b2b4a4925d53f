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

test('a ValidatingAdmissionPolicy denial names the policy and its binding', () => {
  const v = patchVerdict(status(403, 'Invalid', "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'freeze' with binding 'freeze-all' denied request: frozen"));
  assert.equal(v.result, 'denied-by-policy');
  assert.match(describePatchVerdict(v), /ValidatingAdmissionPolicy "freeze" \(binding "freeze-all"\)/);
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
