// The sweep's lists: every page of one resource in each namespace it covers, each object handed
// over as its page arrives, so that the sweep holds a page at a time and what it keeps of it.

import pRetry from 'p-retry';
import { listPages, type Lister } from './list-pages.ts';
import { ApiError, isRetryable, isTooManyRequests } from '../kube/errors.ts';
import { retryAfterMs } from '../kube/retry-after.ts';
import type { ResourceRef } from '../kube/metadata-api.ts';
import { objectKey, type MetaObject } from '../kube/objects.ts';
import type { Logger } from '../log.ts';

/** Lists yield to removals when the budget is tight: orphans are waiting. */
export const LIST_PRIORITY = 4;

export interface SweepListOptions {
  /** namespaces to list one after another; empty: one list across all namespaces. */
  namespaces: readonly string[];
  labelSelector?: string;
  pageSize: number;
  logger: Pick<Logger, 'info' | 'warn'>;
}

/**
 * listAll lists a resource page by page, handing each object over as its page arrives. A page that
 * fails transiently is asked for again, three times in a row at most (p-retry); a 429 is not a
 * failure but the server being busy: the list waits its Retry-After (clamped,
 * kube/retry-after.ts) and asks again for as long as the throttling lasts, as the controller
 * does, until the sweep is stopped (SIGINT/SIGTERM), and the three tries start afresh after it.
 * The 429s are handled here, around p-retry, because p-retry ends a run whose retries are spent
 * at the next failure of any kind: in a mixed storm, the first 429 after three 5xx ended the
 * sweep. The first 429 of a list is logged once. When a continue token expires the list starts
 * again from the top (see listPages), and objects the abandoned pass already handed over are not
 * handed over again: the sweep counts each pod once, and an older view is safe, since every
 * write carries the resourceVersion it was computed from and an owner is confirmed gone against
 * the API; the most it can do is keep a finalizer a while longer.
 */
export async function listAll(
  api: Lister & { resource: ResourceRef },
  o: SweepListOptions,
  stop: AbortSignal,
  each: (obj: MetaObject) => void,
): Promise<void> {
  let throttled = false;
  const retrying: Lister = {
    list: async (namespace, opts, signal) => {
      for (;;) {
        try {
          return await pRetry(() => api.list(namespace, opts, signal), {
            retries: 3,
            minTimeout: 200,
            signal,
            shouldRetry: ({ error }) => isRetryable(error) && !isTooManyRequests(error),
          });
        } catch (err) {
          if (!isTooManyRequests(err)) throw err;
          const waitMs = retryAfterMs((err as ApiError).retryAfterSeconds);
          if (!throttled) o.logger.warn({ resource: api.resource.resource, retryAfterMs: waitMs }, 'the API server is throttling the list (429): waiting and asking again until it answers');
          throttled = true;
          await wait(waitMs, signal);
        }
      }
    },
  };
  for (const namespace of o.namespaces.length > 0 ? o.namespaces : [null]) {
    const handedOver = new Set<string>();
    let restarted = false;
    const pages = listPages(retrying, { namespace, labelSelector: o.labelSelector, pageSize: o.pageSize, priority: LIST_PRIORITY, log: o.logger, resource: api.resource.resource }, stop);
    for await (const page of pages) {
      restarted ||= page.restarted;
      for (const obj of page.items) {
        const key = objectKey({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });
        if (restarted && handedOver.has(key)) continue;
        handedOver.add(key);
        each(obj);
      }
    }
  }
}

/** wait resolves after ms, or rejects with the signal's reason once it aborts. */
function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** trimmed trims a listed object, or logs and skips one that lacks what every object has. */
export function trimmed<T>(obj: MetaObject, trim: (obj: MetaObject) => T, logger: Pick<Logger, 'warn'>): T | null {
  try {
    return trim(obj);
  } catch (err) {
    logger.warn({ object: `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? '?'}`, err: (err as Error).message }, 'skipping an object that cannot be read');
    return null;
  }
}
