// What `explain pod` and `explain namespace` share when they read owners live: src/owners with
// no cache, so that every answer is a live read's, the words for an owner read that failed, and
// whether it failed because the owner resource is uninstalled. Each explain has its own report;
// what an owner read concludes must be the same in both.

import type { Settings } from '../config/settings.ts';
import { silentLogger } from '../log.ts';
import type { ApiClient } from '../kube/client.ts';
import { isResourceNotServed } from '../kube/errors.ts';
import { confirmOwnerUninstalled, crdNameOf } from '../owners/crd-absence.ts';
import { Owners } from '../owners/owners.ts';
import type { OwnerReader } from '../owners/resolver.ts';
import type { NamespaceDeletions } from '../namespaces/namespace-deletions.ts';
import { refusal } from './refusal.ts';

/**
 * liveOwners is src/owners with an empty cache: what it concludes of an owner comes from a live
 * read, under the controller's own rules. Its log lines speak of the controller's retries; the
 * reports say the same in their own words instead, so it logs nothing. stop() it when done.
 * `namespaces` are the namespaces read being deleted (absent: the rule is off).
 */
export function liveOwners(settings: Settings, read: OwnerReader, namespaces?: NamespaceDeletions): Owners {
  return new Owners({
    owner: settings.owner,
    cache: { get: () => undefined },
    read,
    metrics: { ownerConfirmation: () => undefined, ownerResourceServed: () => undefined },
    logger: silentLogger(),
    outageConsequence: 'explain reports the owner unconfirmed',
    ...(namespaces !== undefined ? { namespaces } : {}),
    // The explain command refuses owner settings that discovery does not prove (commands/explain.ts);
    // where the group/version is not served, every owner read fails before it can conclude anything.
    settingsProven: true,
  });
}

/** ownerReadNote says why an owner read failed; the owner then stays unconfirmed. */
export function ownerReadNote(settings: Settings, err: unknown): string {
  const o = settings.owner;
  const resource = o.group === '' ? o.resource : `${o.resource}.${o.group}`;
  return isResourceNotServed(err)
    ? `${resource}/${o.version} is not served (a 404 naming no object): the CRD is missing or that version is not served; no pod is freed on an owner found missing meanwhile`
    : refusal(err, `get ${resource}`);
}

/**
 * uninstalledOwner says, for an owner read that failed, whether the owner resource is uninstalled
 * (its CRD deleted, every owner with it: owners/crd-absence.ts proves it); null when the read
 * failed for any other reason, or the proof does not hold.
 */
export async function uninstalledOwner(settings: Settings, client: ApiClient, err: unknown): Promise<{ crd: string; note: string } | null> {
  const o = settings.owner;
  if (!isResourceNotServed(err) || (await confirmOwnerUninstalled(client, o)).state !== 'uninstalled') return null;
  return { crd: crdNameOf(o), note: `${o.group === 'argoproj.io' ? "Argo's CRD" : 'the CRD'} ${crdNameOf(o)} is deleted: every ${o.kind} went with it` };
}
