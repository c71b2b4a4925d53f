// The controller's and the sweep's narrow view of the API: metadata-only pods and owners, trimmed
// to what a decision reads. The reconcile step and owner resolution only ever see these.

import type { Settings } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import { MetadataApi, PODS } from '../kube/metadata-api.ts';
import type { MetaObject, PodMeta, WorkflowMeta } from '../kube/objects.ts';
import { toPodMeta, toWorkflowMeta, type OwnerTable } from '../cache/trim.ts';
import type { OwnerReader } from '../owners/resolver.ts';
import { BatchedOwnerReads, type OwnerPageReader } from '../owners/batched-reads.ts';
import type { PodStore, Store } from '../cache/store.ts';
import type { Logger } from '../log.ts';
import type { StatusReader } from '../argo/workflow-records.ts';
import { isObjectNotFound } from '../kube/errors.ts';
import type { PodApi } from '../work/reconcile.ts';

export interface ResourceApis {
  pods: MetadataApi;
  workflows: MetadataApi;
  trimPod(obj: MetaObject): PodMeta;
  /** trimPodSharing is trimPod that shares owner references with the pods `owners` holds (the cache's PodStore). */
  trimPodSharing(owners: OwnerTable): (obj: MetaObject) => PodMeta;
  trimWorkflow(obj: MetaObject): WorkflowMeta;
  podApi: PodApi;
  readOwner: OwnerReader;
  /** listOwnerPage reads one page of a namespace's owners (settings.listPageSize a page), to confirm many at once. */
  listOwnerPage: OwnerPageReader;
  /** readStatus GETs one owner whole, for the node status of its pods (src/argo/). */
  readStatus: StatusReader;
}

export function resourceApis(settings: Settings, client: ApiClient): ResourceApis {
  const pods = new MetadataApi(client, PODS);
  const workflows = new MetadataApi(client, settings.owner);
  const trimOpts = { finalizer: settings.finalizer, conventions: settings.conventions, owner: settings.owner };
  const trimPod = (obj: MetaObject) => toPodMeta(obj, trimOpts);
  const trimWorkflow = (obj: MetaObject) => toWorkflowMeta(obj, settings.conventions);
  return {
    pods,
    workflows,
    trimPod,
    trimPodSharing: (owners) => {
      const sharing = { ...trimOpts, owners };
      return (obj) => toPodMeta(obj, sharing);
    },
    trimWorkflow,
    podApi: {
      patch: (namespace, name, patch, priority, signal) => pods.patchMergeUnread(namespace, name, patch, { signal, priority }),
      read: async (namespace, name, priority, signal) => {
        const obj = await pods.get(namespace, name, signal, priority);
        return obj === null ? null : trimPod(obj);
      },
    },
    readOwner: async (namespace, name, priority) => {
      const obj = await workflows.get(namespace, name, undefined, priority);
      return obj === null ? null : trimWorkflow(obj);
    },
    listOwnerPage: async (namespace, continueToken, priority) => {
      const page = await workflows.list(namespace, { limit: settings.listPageSize, priority, ...(continueToken !== null ? { continue: continueToken } : {}) });
      return { items: page.items.map(trimWorkflow), continue: page.continue };
    },
    readStatus: async (namespace, name, priority) => {
      const root = settings.owner.group === '' ? `/api/${settings.owner.version}` : `/apis/${settings.owner.group}/${settings.owner.version}`;
      try {
        // A plain GET (not metadata only): the status is what is read. Never cached: one Workflow reaches 1 MiB.
        const wf = await client.request<{ metadata?: { uid?: unknown; resourceVersion?: unknown }; status?: unknown }>({
          method: 'GET',
          path: `${root}/namespaces/${encodeURIComponent(namespace)}/${settings.owner.resource}/${encodeURIComponent(name)}`,
          priority,
          verb: 'get',
          subject: { group: settings.owner.group, resource: settings.owner.resource, name },
        });
        const { uid, resourceVersion } = wf.metadata ?? {};
        if (typeof uid !== 'string' || typeof resourceVersion !== 'string') throw new Error(`${namespace}/${name}: the Workflow read has no uid or resourceVersion`);
        return { uid, resourceVersion, status: wf.status };
      } catch (err) {
        if (isObjectNotFound(err)) return null;
        throw err;
      }
    },
  };
}

/**
 * batchedOwnerReads confirms owners through one list of a namespace where that is cheaper than a
 * GET each (src/owners/batched-reads.ts), sized by the caches of the controller or the sweep.
 */
export function batchedOwnerReads(settings: Settings, apis: ResourceApis, caches: { workflows: Store<WorkflowMeta>; pods: PodStore }, logger: Logger): BatchedOwnerReads {
  return new BatchedOwnerReads({
    get: apis.readOwner,
    listPage: apis.listOwnerPage,
    pageSize: settings.listPageSize,
    cachedOwners: (namespace) => caches.workflows.countIn(namespace),
    // Owners the cached pods name beyond those the owner cache holds: about that many will need a
    // read (a pod without our finalizer needs none, but the garbage collector deletes it with its owner).
    awaiting: (namespace) => caches.pods.ownersNamedIn(namespace) - caches.workflows.countIn(namespace),
    logger,
  });
}
