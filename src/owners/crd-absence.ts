// Whether the owner resource is uninstalled: its CustomResourceDefinition deleted, and with it,
// by the API server's own CRD cleanup, every object of it. That is the one case where a 404 that
// names no object says something about every owner (owners.ts otherwise holds such 404s back as
// an outage): `sweep --owner-crd-deleted` frees pods on it, and `explain` names it.
//
// A misspelt --owner-resource must never read as "uninstalled": `workflow.argoproj.io` never
// existed, so its CRD answers 404 as a deleted one does. Absence is therefore proven for the
// owner's kind, not only for a name: no CRD in the cluster defines --owner-kind in
// --owner-group, and no API the server serves (CRD or aggregated) offers that kind or that
// resource name in the group. The pods freed are then only those whose ownerReferences name that
// kind in that group, so a misspelt kind or group finds none.

import type { OwnerResource } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import { ApiError, isForbidden, isObjectNotFound, isResourceNotServed } from '../kube/errors.ts';

export type OwnerInstallState = 'uninstalled' | 'installed' | 'unknown';

/** OwnerInstallation: `uninstalled` proven, `installed` (something still defines or serves the owner), or `unknown` (a read failed). */
export interface OwnerInstallation {
  state: OwnerInstallState;
  /** One sentence for people: what was found, or which read failed and what to grant or fix. */
  detail: string;
}

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
/** CRDs are listed a page at a time: each carries its schema, and a cluster may hold thousands. */
const CRD_PAGE = 100;

/** crdNameOf is the name the owner's CRD has: `<plural>.<group>`. */
export function crdNameOf(owner: Pick<OwnerResource, 'resource' | 'group'>): string {
  return `${owner.resource}.${owner.group}`;
}

interface Crd {
  metadata?: { name?: string; deletionTimestamp?: string };
  spec?: { group?: string; names?: { kind?: string; plural?: string } };
}

interface ApiResourceList {
  resources?: Array<{ name?: string; kind?: string }>;
}

/** Reading: the one request confirmOwnerUninstalled needs (ApiClient's, or a script in tests). */
export type Requester = Pick<ApiClient, 'request'>;

/**
 * confirmOwnerUninstalled checks, in order, with read-only requests: the CRD `<resource>.<group>`
 * answers 404 naming exactly it; no CRD defines the owner's kind in its group; the group's
 * discovery lists neither the resource nor the kind in any version. The first that fails decides.
 */
export async function confirmOwnerUninstalled(client: Requester, owner: OwnerResource, signal?: AbortSignal): Promise<OwnerInstallation> {
  const name = crdNameOf(owner);
  if (owner.group === '') return { state: 'unknown', detail: `${owner.resource} is in the core API group, which no CRD defines` };
  try {
    return (await namedCrd(client, name, signal)) ?? (await crdOfKind(client, owner, signal)) ?? (await servedInGroup(client, owner, signal)) ?? {
      state: 'uninstalled',
      detail: `the CRD ${name} does not exist (the API server's 404 names it), no CRD defines ${owner.kind} in ${owner.group}, and the API server serves no ${owner.resource} or ${owner.kind} in ${owner.group}: every ${owner.kind} went with the CRD`,
    };
  } catch (err) {
    if (err instanceof Unconfirmed) return { state: 'unknown', detail: err.message };
    throw err;
  }
}

/** Unconfirmed: a read needed for the proof failed; its message says which and why. */
class Unconfirmed extends Error {}

/** namedCrd: installed when the CRD exists; null (go on) only on a 404 whose Status names it. */
async function namedCrd(client: Requester, name: string, signal?: AbortSignal): Promise<OwnerInstallation | null> {
  try {
    const crd = await client.request<Crd>({
      method: 'GET',
      path: `${CRDS}/${encodeURIComponent(name)}`,
      subject: { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', name },
      verb: 'get',
      signal,
    });
    const deleting = crd.metadata?.deletionTimestamp !== undefined;
    return {
      state: 'installed',
      detail: deleting
        ? `the CRD ${name} exists and is being deleted: the API server is still deleting its objects; run again once it is gone`
        : `the CRD ${name} exists: owners are not gone; run sweep without --owner-crd-deleted`,
    };
  } catch (err) {
    if (isObjectNotFound(err)) return null;
    throw unconfirmed(err, `get customresourcedefinitions (${name})`);
  }
}

/**
 * crdOfKind: installed when another CRD defines the owner's kind in its group: then
 * --owner-resource names something else (a singular, a typo), and the real owners may live, even
 * with every version of their CRD unserved.
 */
async function crdOfKind(client: Requester, owner: OwnerResource, signal?: AbortSignal): Promise<OwnerInstallation | null> {
  let cont: string | undefined;
  do {
    let page: { items?: Crd[] | null; metadata?: { continue?: string } };
    try {
      page = await client.request({ method: 'GET', path: CRDS, query: { limit: CRD_PAGE, continue: cont }, verb: 'list', signal });
    } catch (err) {
      throw unconfirmed(err, 'list customresourcedefinitions');
    }
    const same = (page.items ?? []).find((c) => c.spec?.group === owner.group && c.spec.names?.kind === owner.kind);
    if (same !== undefined) {
      const plural = same.spec?.names?.plural ?? '?';
      return {
        state: 'installed',
        detail: `the CRD ${same.metadata?.name ?? '?'} defines ${owner.kind} in ${owner.group} as ${plural}: --owner-resource ${owner.resource} names something else; with --owner-resource ${plural}, run sweep without --owner-crd-deleted`,
      };
    }
    cont = page.metadata?.continue || undefined;
  } while (cont !== undefined);
  return null;
}

/**
 * servedInGroup: installed when discovery lists the resource or the kind in any version of the
 * group: an aggregated API (or a CRD's discovery not yet updated) serves owners that may live.
 * A group the server does not know at all answers 404.
 */
async function servedInGroup(client: Requester, owner: OwnerResource, signal?: AbortSignal): Promise<OwnerInstallation | null> {
  let versions: string[];
  try {
    const group = await client.request<{ versions?: Array<{ version?: string }> }>({ method: 'GET', path: `/apis/${owner.group}`, verb: 'discovery', signal });
    versions = (group.versions ?? []).flatMap((v) => (typeof v.version === 'string' ? [v.version] : []));
  } catch (err) {
    if (isResourceNotServed(err)) return null;
    throw unconfirmed(err, `get /apis/${owner.group} (discovery)`);
  }
  for (const version of versions) {
    let list: ApiResourceList;
    try {
      list = await client.request<ApiResourceList>({ method: 'GET', path: `/apis/${owner.group}/${version}`, verb: 'discovery', signal });
    } catch (err) {
      if (isResourceNotServed(err)) continue; // the version went between the two reads
      throw unconfirmed(err, `get /apis/${owner.group}/${version} (discovery)`);
    }
    // Subresources ("workflows/status") carry their parent's kind; only top-level resources count.
    const served = (list.resources ?? []).find((r) => typeof r.name === 'string' && !r.name.includes('/') && (r.name === owner.resource || r.kind === owner.kind));
    if (served !== undefined) {
      return {
        state: 'installed',
        detail: `the API server serves ${served.name}.${owner.group}/${version} (kind ${served.kind ?? '?'}): owners of kind ${owner.kind} may exist; run sweep without --owner-crd-deleted (and check --owner-resource)`,
      };
    }
  }
  return null;
}

/** unconfirmed words a failed read: a 403 names the RBAC to grant. */
function unconfirmed(err: unknown, what: string): Unconfirmed {
  if (isForbidden(err)) return new Unconfirmed(`cannot confirm that the owner's CRD is deleted: ${what} is forbidden (403): grant get and list on customresourcedefinitions.apiextensions.k8s.io`);
  const message = err instanceof ApiError ? `HTTP ${err.status}: ${err.message}` : err instanceof Error ? err.message : String(err);
  return new Unconfirmed(`cannot confirm that the owner's CRD is deleted: ${what} failed (${message})`);
}
