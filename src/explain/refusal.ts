// How explain words a read that failed, in its "Could not check" lines: every reader says it the
// same way, and a 403 names the verb an operator would grant.

import { ApiError, isForbidden } from '../kube/errors.ts';

/** refusal says why a read failed; a 403 names the verb to grant. */
export function refusal(err: unknown, verb: string): string {
  if (isForbidden(err)) return `forbidden (403): grant ${verb}`;
  return err instanceof ApiError ? `HTTP ${err.status}: ${err.message}` : messageOf(err);
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
