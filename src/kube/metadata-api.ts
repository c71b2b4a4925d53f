// MetadataApi: list, watch, get and merge-patch one resource, asking the server for metadata
// only (PartialObjectMetadata). A fat Argo pod is tens of KB; its metadata a few hundred bytes,
// and decisions read nothing else. The Accept header falls back to plain JSON for servers that
// cannot transform, and everything downstream reads only `metadata`, so either answer works.
// See https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-tables
// (the same mechanism) and /work/shared/CONTROL-PLANE.md for the quirks checked on 1.20.
import type { ApiClient, RequestOptions } from './client.ts';
import { isObjectNotFound, type Subject } from './errors.ts';
import type { MetaObject } from './objects.ts';
import type { WatchEvent } from './watch-stream.ts';

/** ResourceRef names a resource as in its URL: group "" is the core API. */
export interface ResourceRef {
  group: string;
  version: string;
  /** Plural resource name, as in the URL path. */
  resource: string;
}

/** PODS is the core pods resource. */
export const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };

// The list form on a watch answers 200 with an empty stream: each call needs its own form.
const ACCEPT_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const ACCEPT_ONE = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

export interface ListOptions {
  labelSelector?: string;
  limit?: number;
  continue?: string;
  priority?: number;
}

/** MetaList is one page of a list. */
export interface MetaList {
  /** resourceVersion of the snapshot the pages are read from; a watch resumes from it. */
  resourceVersion: string;
  /** continue is the token for the next page, or null on the last one. */
  continue: string | null;
  items: MetaObject[];
}

export interface WatchOptions {
  labelSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  priority?: number;
  /**
   * sendInitialEvents asks for a WatchList: every object as an ADDED event first (from the watch
   * cache, consistent with etcd), then a bookmark annotated INITIAL_EVENTS_END, then changes.
   * Sent with resourceVersionMatch=NotOlderThan and no resourceVersion, as client-go does.
   */
  sendInitialEvents?: boolean;
  /** onOpen is called once the watch's answer opens with 2xx, before any event. */
  onOpen?: () => void;
}

/** INITIAL_EVENTS_END annotates the bookmark that ends a WatchList's initial events. */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export interface PatchOptions {
  signal?: AbortSignal;
  priority?: number;
  /** dryRun: the server validates the patch and answers as if applied, storing nothing. */
  dryRun?: boolean;
}

interface WireList {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: MetaObject[] | null;
}

/** MetadataApi reads and patches one resource, metadata only. */
export class MetadataApi {
  readonly resource: ResourceRef;
  readonly #client: Pick<ApiClient, 'request' | 'watch'>;

  constructor(client: Pick<ApiClient, 'request' | 'watch'>, resource: ResourceRef) {
    this.#client = client;
    this.resource = resource;
  }

  /** list reads one page; namespace null lists across all namespaces. */
  async list(namespace: string | null, opts: ListOptions = {}, signal?: AbortSignal): Promise<MetaList> {
    const wire = await this.#client.request<WireList>({
      method: 'GET',
      path: this.#path(namespace),
      query: { labelSelector: opts.labelSelector, limit: opts.limit, continue: opts.continue },
      accept: ACCEPT_LIST,
      signal,
      priority: opts.priority,
      verb: 'list',
    });
    return {
      resourceVersion: wire.metadata?.resourceVersion ?? '',
      continue: wire.metadata?.continue || null,
      items: wire.items ?? [], // an empty metadata-only list has "items": null
    };
  }

  /** watch streams changes; see ApiClient.watch for how it ends and fails. */
  watch(namespace: string | null, opts: WatchOptions = {}, signal?: AbortSignal): AsyncGenerator<WatchEvent<MetaObject>> {
    return this.#client.watch<MetaObject>({
      method: 'GET',
      path: this.#path(namespace),
      query: {
        watch: 'true',
        labelSelector: opts.labelSelector,
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: opts.allowWatchBookmarks,
        timeoutSeconds: opts.timeoutSeconds,
        sendInitialEvents: opts.sendInitialEvents ? 'true' : undefined,
        resourceVersionMatch: opts.sendInitialEvents ? 'NotOlderThan' : undefined,
      },
      accept: ACCEPT_ONE,
      signal,
      priority: opts.priority,
      verb: 'watch',
      ...(opts.onOpen !== undefined ? { onOpen: opts.onOpen } : {}),
    });
  }

  /**
   * get reads one object, or null if it does not exist. Without a resourceVersion the read is
   * served from etcd (a quorum read), not the API server's watch cache: what confirming that
   * an owner is gone requires. Only a 404 whose Status names this very object (name, resource
   * and group) means "does not exist"; any other 404 (the resource not served, a gateway's page)
   * is thrown, since it proves nothing about the object. namespace null reads a cluster-scoped
   * object (a namespace).
   */
  async get(namespace: string | null, name: string, signal?: AbortSignal, priority?: number): Promise<MetaObject | null> {
    try {
      return await this.#client.request<MetaObject>({
        method: 'GET',
        path: `${this.#path(namespace)}/${encodeURIComponent(name)}`,
        accept: ACCEPT_ONE,
        signal,
        priority,
        verb: 'get',
        subject: this.#subject(name),
      });
    } catch (err) {
      if (isObjectNotFound(err)) return null;
      throw err;
    }
  }

  /**
   * patchMerge applies a JSON merge patch (RFC 7386) and returns the object's new metadata.
   * Include metadata.resourceVersion in the patch to make it conditional (409 if stale).
   */
  patchMerge(namespace: string, name: string, patch: unknown, opts: PatchOptions = {}): Promise<MetaObject> {
    return this.#client.request<MetaObject>(this.#patchRequest(namespace, name, patch, opts));
  }

  /**
   * patchMergeUnread applies a JSON merge patch as patchMerge does, but drains the answer unread:
   * for the removal, whose outcome is the status alone (the watch brings the new object).
   * Decompressing and parsing the answer, managedFields and all, only to drop it, cost CPU on
   * every removal.
   */
  async patchMergeUnread(namespace: string, name: string, patch: unknown, opts: PatchOptions = {}): Promise<void> {
    await this.#client.request<undefined>({ ...this.#patchRequest(namespace, name, patch, opts), unread: true });
  }

  #patchRequest(namespace: string, name: string, patch: unknown, opts: PatchOptions): RequestOptions {
    return {
      method: 'PATCH',
      path: `${this.#path(namespace)}/${encodeURIComponent(name)}`,
      query: { dryRun: opts.dryRun ? 'All' : undefined },
      body: patch,
      contentType: 'application/merge-patch+json',
      accept: ACCEPT_ONE,
      signal: opts.signal,
      priority: opts.priority,
      verb: 'patch',
      subject: this.#subject(name),
    };
  }

  #subject(name: string): Subject {
    return { group: this.resource.group, resource: this.resource.resource, name };
  }

  #path(namespace: string | null): string {
    const { group, version, resource } = this.resource;
    const root = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    return namespace === null ? `${root}/${resource}` : `${root}/namespaces/${encodeURIComponent(namespace)}/${resource}`;
  }
}
