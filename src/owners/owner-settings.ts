// Whether the owner settings (--owner-group, --owner-version, --owner-resource, --owner-kind)
// name what the API server serves, proven from discovery before any owner read counts as
// evidence. Argo installs eight CRDs in argoproj.io: with --owner-resource cronworkflows the list
// and the watch work, every Workflow's name then reads as a CronWorkflow not found (a 404 that
// names the object), and every pod of every running Workflow would look orphaned. Only discovery
// tells a resource that exists but is not the owner from one that is: it must list the resource,
// namespaced, serving the configured kind.
//
// A group/version that is not served at all says nothing about the settings (Argo not installed
// yet, a version switched off): that is the owner outage of availability.ts, waited out.

import type { OwnerResource } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';

/** ApiResource is one entry of a discovery document (metav1.APIResource, the fields read here). */
export interface ApiResource {
  name?: unknown;
  kind?: unknown;
  namespaced?: unknown;
  verbs?: unknown;
}

export type OwnerSettingsVerdict =
  /** The group/version lists the resource, namespaced, serving the configured kind, readable. */
  | { kind: 'proven' }
  /** The group/version is not served (404): the owner outage, waited out; nothing is proven. */
  | { kind: 'not-served'; detail: string }
  /** The group/version is served and lists neither the resource nor the kind: a CRD missing (or uninstalled), or both names mistyped. */
  | { kind: 'absent'; detail: string }
  /** The group/version serves something else under these settings: they do not name the owner. */
  | { kind: 'mismatch'; detail: string };

/** The verbs the controller needs on the owner resource (the sweep and explain need fewer). */
const NEEDED_VERBS = ['get', 'list', 'watch'];

/** discoveryPath is where the API server lists the resources of a group/version. */
export function discoveryPath(owner: Pick<OwnerResource, 'group' | 'version'>): string {
  return owner.group === '' ? `/api/${owner.version}` : `/apis/${owner.group}/${owner.version}`;
}

/** groupVersionOf names a group/version as apiVersion does: "argoproj.io/v1alpha1", or "v1". */
export function groupVersionOf(owner: Pick<OwnerResource, 'group' | 'version'>): string {
  return owner.group === '' ? owner.version : `${owner.group}/${owner.version}`;
}

/** settingsFlags names the settings as the command line takes them, for the messages. */
export function settingsFlags(owner: OwnerResource): string {
  return `--owner-group ${owner.group === '' ? '""' : owner.group} --owner-version ${owner.version} --owner-resource ${owner.resource} --owner-kind ${owner.kind}`;
}

/** judgeOwnerSettings is the rule, on the resources a served group/version lists. */
export function judgeOwnerSettings(owner: OwnerResource, resources: readonly ApiResource[]): OwnerSettingsVerdict {
  // Subresources ("workflows/status") carry their parent's kind: only top-level resources count.
  const top = resources.filter((r): r is ApiResource & { name: string } => typeof r.name === 'string' && !r.name.includes('/'));
  const gv = groupVersionOf(owner);
  const served = `${gv} serves ${describe(top)}`;
  const named = top.find((r) => r.name === owner.resource);
  if (named === undefined) {
    const sameKind = top.find((r) => r.kind === owner.kind);
    if (sameKind !== undefined) return { kind: 'mismatch', detail: `${gv} has no resource ${owner.resource}; it serves kind ${owner.kind} as ${sameKind.name} (${served})` };
    return { kind: 'absent', detail: `${gv} serves neither a resource ${owner.resource} nor a kind ${owner.kind} (${served})` };
  }
  if (named.kind !== owner.kind) return { kind: 'mismatch', detail: `${gv} serves ${owner.resource} as kind ${String(named.kind)}, not ${owner.kind} (${served})` };
  if (named.namespaced !== true) return { kind: 'mismatch', detail: `${gv} serves ${owner.resource} cluster-scoped; the owners of pods are namespaced (${served})` };
  const verbs = Array.isArray(named.verbs) ? named.verbs : [];
  const missing = NEEDED_VERBS.filter((v) => !verbs.includes(v));
  if (missing.length > 0) return { kind: 'mismatch', detail: `${gv} serves ${owner.resource} without ${missing.join(', ')}` };
  return { kind: 'proven' };
}

/**
 * checkOwnerSettings reads the group/version's discovery document and judges it. A 404 is
 * `not-served`; any other failure is thrown for the caller to retry or report.
 */
export async function checkOwnerSettings(client: Pick<ApiClient, 'request'>, owner: OwnerResource, signal?: AbortSignal): Promise<OwnerSettingsVerdict> {
  const path = discoveryPath(owner);
  let list: { resources?: unknown };
  try {
    list = await client.request<{ resources?: unknown }>({ method: 'GET', path, verb: 'discovery', priority: 0, signal });
  } catch (err) {
    if (isNotFound(err)) return { kind: 'not-served', detail: `the API server does not serve ${groupVersionOf(owner)} (GET ${path}: 404)` };
    throw err;
  }
  const resources = Array.isArray(list.resources) ? (list.resources as ApiResource[]) : [];
  return judgeOwnerSettings(owner, resources);
}

/** describe lists resources with their kinds, a dozen at most: "workflows (Workflow), ...". */
function describe(resources: ReadonlyArray<ApiResource & { name: string }>): string {
  if (resources.length === 0) return 'no resource';
  const shown = resources.slice(0, 12).map((r) => `${r.name} (${typeof r.kind === 'string' ? r.kind : '?'})`);
  return shown.join(', ') + (resources.length > shown.length ? `, and ${resources.length - shown.length} more` : '');
}
