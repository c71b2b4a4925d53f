// classify maps an API error to what the reconcile step does about it. Anything unrecognised is
// treated as transient: retrying a write that carries a resourceVersion is always safe, while
// dropping a pod would leave it stuck.

import { ApiError, isConflict, isForbidden, isObjectNotFound, isResourceNotServed, isTooManyRequests } from '../kube/errors.ts';
import { retryAfterMs } from '../kube/retry-after.ts';
import type { Failure } from './reconcile.ts';
import { OwnerEvidenceHeld } from '../owners/owners.ts';

export function classify(err: unknown): Failure {
  const message = err instanceof Error ? err.message : String(err);
  // An owner found missing while its resource is not served: the same outage, seen from here.
  if (err instanceof OwnerEvidenceHeld) return { kind: 'not-served', retryAfterMs: null, message };
  if (isObjectNotFound(err)) return { kind: 'not-found', retryAfterMs: null, message };
  // A 404 about the resource, not the object: an outage of the resource, never "already gone".
  if (isResourceNotServed(err)) return { kind: 'not-served', retryAfterMs: null, message: `resource not served (404): ${message}` };
  if (isConflict(err)) return { kind: 'conflict', retryAfterMs: null, message };
  if (isTooManyRequests(err)) {
    return { kind: 'throttled', retryAfterMs: retryAfterMs((err as ApiError).retryAfterSeconds), message };
  }
  // RBAC's answer: a removal it refuses fails, an owner read it refuses waits (reconcile.ts).
  if (isForbidden(err)) return { kind: 'forbidden', retryAfterMs: null, message: `403 Forbidden: ${message}` };
  // 4xx other than these (422 Invalid, 400 BadRequest) will not change by retrying.
  // 401 may: credentials rotate, and the client refreshes them.
  if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 401) {
    return { kind: 'rejected', retryAfterMs: null, message: `${err.status}: ${message}` };
  }
  return { kind: 'transient', retryAfterMs: null, message };
}
