// listPages reads one list page by page, following `continue`, for the reflector and the sweep
// alike. A continue token pins the list to the snapshot of its first page; once etcd compacts
// that revision the server answers 410 ("the provided continue parameter is too old"), and a
// consistent list can only be had by starting again from the top. See
// https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
import { isGone } from '../kube/errors.ts';
import type { ListOptions, MetaList } from '../kube/metadata-api.ts';
import type { MetaObject } from '../kube/objects.ts';

/** Lister reads one page of a list (MetadataApi, or a fake in tests). */
export interface Lister {
  list(namespace: string | null, opts: ListOptions, signal?: AbortSignal): Promise<MetaList>;
}

/** ListPage is one page of a list. */
export interface ListPage {
  items: MetaObject[];
  /** resourceVersion of the snapshot the page was read from; a watch resumes from the last page's. */
  resourceVersion: string;
  /**
   * restarted: the continue token expired and this page starts the list again from the top, from
   * a newer snapshot. What earlier pages handed out may since have changed or gone.
   */
  restarted: boolean;
}

export interface ListPagesOptions {
  /** namespace to list, or null for all namespaces. */
  namespace: string | null;
  labelSelector?: string;
  pageSize: number;
  /** priority of each page request in the API budget. */
  priority: number;
  /** log hears of each restart; resource names the list in its line. */
  log?: { info(obj: object, msg: string): void };
  resource?: string;
  /** onExpired hears of each expired continue token that restarts the list from the top. */
  onExpired?: () => void;
}

/** A list that keeps outliving its continue tokens is failing for another reason: give up. */
const MAX_EXPIRED_RESTARTS = 3;

/**
 * listPages yields each page as it arrives and asks for the next only when the consumer wants it,
 * so a consumer can handle a page before the next is read. It throws when signal fires rather
 * than end early, so a consumer never takes a partial list for a complete one. Any error other
 * than an expired continue token is the caller's to handle: the sweep retries a page, the
 * reflector restarts its list/watch with backoff.
 */
export async function* listPages(source: Lister, o: ListPagesOptions, signal?: AbortSignal): AsyncGenerator<ListPage, void, undefined> {
  let cont: string | undefined;
  let restarted = false;
  let expiredRestarts = 0;
  for (;;) {
    signal?.throwIfAborted();
    let page: MetaList;
    try {
      page = await source.list(o.namespace, { labelSelector: o.labelSelector, limit: o.pageSize, continue: cont, priority: o.priority }, signal);
    } catch (err) {
      if (cont === undefined || !isGone(err) || ++expiredRestarts > MAX_EXPIRED_RESTARTS) throw err;
      o.log?.info({ resource: o.resource, namespace: o.namespace }, 'list continue token expired; listing again');
      o.onExpired?.();
      cont = undefined;
      restarted = true;
      continue;
    }
    yield { items: page.items, resourceVersion: page.resourceVersion, restarted };
    restarted = false;
    if (page.continue === null) return;
    cont = page.continue;
  }
}
