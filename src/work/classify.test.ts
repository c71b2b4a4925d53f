import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify } from './classify.ts';
import { ApiError } from '../kube/errors.ts';
import type { FailureKind } from './reconcile.ts';

const netErr = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

const cases: Array<[string, unknown, FailureKind]> = [
  ['404 naming the object asked for (it does not exist)', ApiError.fromStatus({ reason: 'NotFound', message: 'pods "p" not found', details: { name: 'p', kind: 'pods' } }, 404, null, { group: '', resource: 'pods', name: 'p' }), 'not-found'],
  ['404 naming another object than the one asked for', ApiError.fromStatus({ reason: 'NotFound', message: 'pods "q" not found', details: { name: 'q', kind: 'pods' } }, 404, null, { group: '', resource: 'pods', name: 'p' }), 'not-served'],
  ['404 naming no object (the resource is not served)', ApiError.fromStatus({ reason: 'NotFound', message: 'the server could not find the requested resource', details: {} }, 404), 'not-served'],
  ['404 from something that is not the API server', ApiError.fromStatus('<html>404</html>', 404), 'not-served'],
  ['409 Conflict', new ApiError(409, 'Conflict', 'the object has been modified'), 'conflict'],
  ['429 Too Many Requests', new ApiError(429, 'TooManyRequests', 'slow down', 7), 'throttled'],
  ['500 Internal Error', new ApiError(500, 'InternalError', 'etcd timeout'), 'transient'],
  ['503 Service Unavailable', new ApiError(503, 'ServiceUnavailable', 'x'), 'transient'],
  ['401 Unauthorized (credentials may rotate)', new ApiError(401, 'Unauthorized', 'x'), 'transient'],
  ['403 Forbidden', new ApiError(403, 'Forbidden', 'cannot patch pods'), 'forbidden'],
  ['422 Invalid', new ApiError(422, 'Invalid', 'bad finalizer'), 'rejected'],
  ['400 Bad Request', new ApiError(400, 'BadRequest', 'x'), 'rejected'],
  ['connection refused', netErr, 'transient'],
  ['an unknown error', new Error('???'), 'transient'],
];

for (const [name, err, want] of cases) {
  test(`classify: ${name} is ${want}`, () => assert.equal(classify(err).kind, want));
}

test('classify: 429 carries Retry-After in milliseconds, defaulting to one second, clamped', () => {
  assert.equal(classify(new ApiError(429, 'TooManyRequests', 'x', 7)).retryAfterMs, 7000);
  assert.equal(classify(new ApiError(429, 'TooManyRequests', 'x')).retryAfterMs, 1000);
  assert.equal(classify(new ApiError(429, 'TooManyRequests', 'x', 0)).retryAfterMs, 1000, 'Retry-After: 0 is no hot loop');
  assert.equal(classify(new ApiError(429, 'TooManyRequests', 'x', 86_400)).retryAfterMs, 60_000);
});
