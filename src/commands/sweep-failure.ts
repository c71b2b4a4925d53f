// How a sweep's failed list becomes an exit code, with a message an operator can act on.

import type { Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import { ApiError, isForbidden, isNetworkError, isNotFound, isUnauthorized } from '../kube/errors.ts';
import { EXIT } from './exit-codes.ts';

/** listFailure maps a failed list to the exit code, with a message an operator can act on. */
export function listFailure(err: unknown, settings: Settings, logger: Logger): number {
  const message = err instanceof Error ? err.message : String(err);
  if (isUnauthorized(err) || isForbidden(err)) {
    logger.error({ err: message }, 'the API server refused the list: check the credentials and RBAC (list pods and owners)');
    return EXIT.unreachable;
  }
  if (isNotFound(err)) {
    const o = settings.owner;
    logger.error({ err: message }, `resource not found: is ${o.resource}.${o.group}/${o.version} installed (see --owner-group/--owner-version/--owner-resource)? If Argo was uninstalled, its CRD deleted with every Workflow: sweep --owner-crd-deleted`);
    return EXIT.badConfig;
  }
  if (isNetworkError(err) || (err instanceof ApiError && err.status >= 500)) {
    logger.error({ err: message }, 'cannot reach the API server');
    return EXIT.unreachable;
  }
  logger.error({ err: message }, 'listing failed');
  return EXIT.unreachable;
}
