import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiError,
  isAbort,
  isConflict,
  forbiddenCause,
  isForbidden,
  isGone,
  isNamespaceTerminating,
  isNetworkError,
  isNotFound,
  isObjectNotFound,
  isResourceNotServed,
  isRetryable,
  isTooManyRequests,
  isUnauthorized,
} from './errors.ts';

function status(code: number, reason = '', extra: Record<string, unknown> = {}): ApiError {
  return ApiError.fromStatus({ kind: 'Status', code, reason, message: `m${code}`, ...extra });
}

function netError(code: string, message = 'x'): Error {
  return Object.assign(new Error(message), { code });
}

test('fromStatus keeps code, reason and message of a Status body', () => {
  const err = status(409, 'Conflict');
  assert.equal(err.status, 409);
  assert.equal(err.reason, 'Conflict');
  assert.equal(err.message, 'm409');
  assert.equal(err.retryAfterSeconds, null);
});

test('fromStatus prefers the HTTP status over the body and survives a body that is not a Status', () => {
  const err = ApiError.fromStatus('<html>bad gateway</html>', 502);
  assert.equal(err.status, 502);
  assert.equal(err.reason, '');
  assert.match(err.message, /HTTP 502/);
});

test('Retry-After comes from the header, in seconds or as a date, else from Status details', () => {
  assert.equal(ApiError.fromStatus({}, 429, '3').retryAfterSeconds, 3);
  const soon = new Date(Date.now() + 60_000).toUTCString();
  const fromDate = ApiError.fromStatus({}, 429, soon).retryAfterSeconds;
  assert.ok(fromDate !== null && fromDate > 0 && fromDate <= 61);
  assert.equal(status(429, 'TooManyRequests', { details: { retryAfterSeconds: 7 } }).retryAfterSeconds, 7);
});

test('each predicate recognises its own status and no other', () => {
  const cases: [(e: unknown) => boolean, number][] = [
    [isNotFound, 404],
    [isConflict, 409],
    [isGone, 410],
    [isTooManyRequests, 429],
    [isUnauthorized, 401],
    [isForbidden, 403],
  ];
  for (const [pred, code] of cases) {
    for (const [, other] of cases) assert.equal(pred(status(other)), other === code, `${pred.name}(${other})`);
  }
});

test('a watch ERROR with reason Expired is gone even when its code is missing', () => {
  assert.ok(isGone(ApiError.fromStatus({ kind: 'Status', reason: 'Expired', message: 'too old resource version' })));
});

test('5xx and 429 are retryable; other 4xx are not', () => {
  for (const code of [500, 502, 503, 504, 429]) assert.ok(isRetryable(status(code)), String(code));
  for (const code of [400, 401, 403, 404, 409, 410, 422]) assert.ok(!isRetryable(status(code)), String(code));
});

test('network failures are retryable network errors', () => {
  for (const code of ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE']) {
    assert.ok(isNetworkError(netError(code)) && isRetryable(netError(code)), code);
  }
  assert.ok(isRetryable(new Error('socket hang up')));
});

test('an abort is never retryable, and neither is an unknown error', () => {
  const abort = AbortSignal.abort().reason as Error;
  assert.ok(isAbort(abort));
  assert.ok(!isRetryable(abort));
  assert.ok(!isRetryable(new TypeError('bug')));
  assert.ok(!isRetryable('ECONNRESET'));
});

const WORKFLOW = { group: 'argoproj.io', resource: 'workflows', name: 'wf' };
const POD = { group: '', resource: 'pods', name: 'p' };

// Only the API server's own answer for a missing object, naming exactly what was asked for, may
// read as "this object is absent": everything else is a resource not served, or a path in trouble.
const notFoundCases: Array<[string, unknown, typeof WORKFLOW | undefined, boolean]> = [
  ['the API server: a Workflow not found', { kind: 'Status', reason: 'NotFound', message: 'workflows.argoproj.io "wf" not found', details: { name: 'wf', group: 'argoproj.io', kind: 'workflows' } }, WORKFLOW, true],
  ['the API server: a pod not found (core: no group)', { kind: 'Status', reason: 'NotFound', message: 'pods "p" not found', details: { name: 'p', kind: 'pods' } }, POD, true],
  ['the resource not served (no details)', { kind: 'Status', reason: 'NotFound', message: 'the server could not find the requested resource', details: {} }, WORKFLOW, false],
  ['details.kind alone', { reason: 'NotFound', details: { kind: 'workflows', group: 'argoproj.io' } }, WORKFLOW, false],
  ['another name', { reason: 'NotFound', details: { name: 'other', group: 'argoproj.io', kind: 'workflows' } }, WORKFLOW, false],
  ['another resource', { reason: 'NotFound', details: { name: 'wf', group: 'argoproj.io', kind: 'cronworkflows' } }, WORKFLOW, false],
  ['another group', { reason: 'NotFound', details: { name: 'wf', group: 'example.com', kind: 'workflows' } }, WORKFLOW, false],
  ['no group where one was asked for', { reason: 'NotFound', details: { name: 'wf', kind: 'workflows' } }, WORKFLOW, false],
  ['an HTML page', '<html><body>404 Not Found</body></html>', WORKFLOW, false],
  ['plain text', '404 page not found', WORKFLOW, false],
  ['a Status naming the object, but the request named no subject', { reason: 'NotFound', details: { name: 'wf', group: 'argoproj.io', kind: 'workflows' } }, undefined, false],
];

for (const [what, body, subject, absent] of notFoundCases) {
  test(`a 404 from ${what}: ${absent ? 'the object is absent' : 'not served, never "absent"'}`, () => {
    const err = ApiError.fromStatus(body, 404, null, subject);
    assert.equal(isObjectNotFound(err), absent);
    assert.equal(isResourceNotServed(err), !absent);
    assert.ok(isNotFound(err));
  });
}

test('fromStatus keeps the causes of a 422, and none where the Status has none', () => {
  const err = status(422, 'Invalid', {
    details: { name: 'p', kind: 'pods', causes: [{ reason: 'FieldValueForbidden', message: 'Forbidden: may not be set', field: 'spec.tolerations' }, 'junk'] },
  });
  assert.deepEqual(err.causes, [{ field: 'spec.tolerations', reason: 'FieldValueForbidden', message: 'Forbidden: may not be set' }]);
  assert.deepEqual(status(409, 'Conflict').causes, []);
});

// NamespaceLifecycle's refusal of a create in a namespace being deleted, as the API server sends it
// (k8s.io/apiserver admission/plugin/namespace/lifecycle: admission.NewForbidden plus one cause).
const NAMESPACE_TERMINATING = {
  kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
  message: 'events.events.k8s.io "wf.1879a" is forbidden: unable to create new content in namespace team-a because it is being terminated',
  details: { name: 'wf.1879a', group: 'events.k8s.io', kind: 'events', causes: [{ reason: 'NamespaceTerminating', message: 'namespace team-a is being terminated', field: 'metadata.namespace' }] },
};
const RBAC_DENIED = {
  kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
  message: 'events.events.k8s.io is forbidden: User "system:serviceaccount:argo:argo" cannot create resource "events" in API group "events.k8s.io" in the namespace "team-a"',
  details: { group: 'events.k8s.io', kind: 'events' },
};

test('a 403 of NamespaceLifecycle (its cause NamespaceTerminating) is told apart from one of RBAC or an admission policy', () => {
  const cases: Array<[string, unknown, boolean, string | null]> = [
    ['NamespaceLifecycle', ApiError.fromStatus(NAMESPACE_TERMINATING, 403), true, 'namespace-terminating'],
    ['RBAC', ApiError.fromStatus(RBAC_DENIED, 403), false, 'denied'],
    ['the same words without the cause', ApiError.fromStatus({ ...NAMESPACE_TERMINATING, details: { name: 'wf.1879a', group: 'events.k8s.io', kind: 'events' } }, 403), false, 'denied'],
    ['the cause on another status', ApiError.fromStatus({ ...NAMESPACE_TERMINATING, code: 422, reason: 'Invalid' }, 422), false, null],
    ['a network error', new Error('socket hang up'), false, null],
  ];
  for (const [name, err, terminating, cause] of cases) {
    assert.equal(isNamespaceTerminating(err), terminating, name);
    assert.equal(forbiddenCause(err), cause, name);
  }
});
