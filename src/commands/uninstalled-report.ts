// The report of `sweep --owner-crd-deleted`: the pods it lists (a dry run) or frees (with
// --confirm), as text for people or one JSON object (docs/operations.md, "After Argo is
// uninstalled", documents its fields). Pure.

import type { OwnerInstallation } from '../owners/crd-absence.ts';

/** PodResult is what happened to one pod: nothing yet (a dry run), or the patch's outcome. */
export type PodResult = 'listed' | 'removed' | 'changed' | 'already-gone' | 'failed' | 'unfinished';

export interface UninstalledPod {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** Every finalizer, in order, as listed: ours goes, the others stay in this order. */
  finalizers: readonly string[];
  owner: { name: string; uid: string };
  result: PodResult;
  error: string | null;
}

export interface UninstalledReport {
  mode: 'owner-crd-deleted';
  /** The CRD confirmed absent, `<resource>.<group>`, and the owner kind the pods name. */
  crd: string;
  ownerKind: string;
  finalizer: string;
  confirmation: OwnerInstallation;
  /** True without --confirm, and when the digest did not match: nothing was written. */
  dryRun: boolean;
  digest: string;
  /** The digest --confirm gave, or null. */
  confirmed: string | null;
  /** The command that confirms this listing; null once confirmed, or when there is nothing to free. */
  command: string | null;
  podsListed: number;
  /** Pods holding our finalizer without an ownerReference of the owner kind and group: left alone. */
  otherPodsWithFinalizer: number;
  pods: UninstalledPod[];
  totals: Record<Exclude<PodResult, 'listed'>, number>;
  interrupted: boolean;
  apiRequests: number;
  wallSeconds: number;
}

/** totalsOf counts the pods by result. */
export function totalsOf(pods: readonly UninstalledPod[]): UninstalledReport['totals'] {
  const totals = { removed: 0, changed: 0, 'already-gone': 0, failed: 0, unfinished: 0 };
  for (const p of pods) if (p.result !== 'listed') totals[p.result]++;
  return totals;
}

/** mismatched: --confirm named a digest other than the listing's; nothing was written. */
export function mismatched(r: Pick<UninstalledReport, 'confirmed' | 'digest'>): boolean {
  return r.confirmed !== null && r.confirmed !== r.digest;
}

/** renderUninstalled is the text report: the confirmation, the pods, then what to do or what was done. */
export function renderUninstalled(r: UninstalledReport): string {
  const lines = [`--owner-crd-deleted confirmed: ${r.confirmation.detail}`];
  const owned = `holding ${r.finalizer} and naming a ${r.ownerKind} as owner`;
  if (r.pods.length === 0) {
    lines.push(`0 pods ${owned} (of ${r.podsListed} listed): nothing to free. A misspelt --owner-kind or --owner-group names no pod's owner: check them against the pods' ownerReferences.`);
  } else {
    lines.push(`${count(r.pods.length, 'pod')} ${owned} (of ${r.podsListed} listed); only ${r.finalizer} is removed, the other finalizers stay in their order:`);
    for (const p of r.pods) {
      const outcome = p.result === 'listed' ? '' : `  ${p.result}${p.error === null ? '' : `: ${p.error}`}`;
      lines.push(`  ${p.namespace}/${p.name} uid ${p.uid} resourceVersion ${p.resourceVersion} owner ${p.owner.name} finalizers ${p.finalizers.join(',')}${outcome}`);
    }
  }
  if (r.otherPodsWithFinalizer > 0) lines.push(`${count(r.otherPodsWithFinalizer, 'other pod')} holding ${r.finalizer} without an ownerReference of kind ${r.ownerKind} in that group: left alone.`);
  lines.push(`digest: ${r.digest}`);
  if (mismatched(r)) {
    lines.push(`the pods changed since the dry run that printed ${r.confirmed}: the digest is now ${r.digest}. Nothing was written. The listing above is a new dry run: check it, then run:`);
  } else if (r.dryRun) {
    lines.push(r.command === null ? 'dry run: nothing was written.' : `dry run: nothing was written. To remove ${r.finalizer} from exactly these pods, run:`);
  }
  if (r.dryRun && r.command !== null) lines.push(`  ${r.command}`);
  if (!r.dryRun) {
    const t = r.totals;
    lines.push(`removed ${t.removed}, changed since the confirmation ${t.changed} (left alone: run a new dry run), already gone ${t['already-gone']}, failed ${t.failed}, not handled ${t.unfinished}`);
  }
  if (r.interrupted) lines.push('interrupted: the report covers the work done before the signal');
  lines.push(`${r.wallSeconds.toFixed(1)} s, ${r.apiRequests} API requests`);
  return lines.join('\n') + '\n';
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}
