// What `sweep --owner-crd-deleted` frees, and the digest that binds a confirmation to it: pure.
// The digest covers each pod's identity and resourceVersion, the finalizer and the owner, so a
// pod created, deleted or changed in any way since the dry run (a label, another finalizer)
// changes it, and a confirmation frees nothing but the very pods the operator was shown.

import { createHash } from 'node:crypto';
import { KEYS } from '../config/keys.ts';
import { DEFAULTS, type OwnerResource, type Settings } from '../config/settings.ts';
import type { PodMeta } from '../kube/objects.ts';
import { crdNameOf } from './crd-absence.ts';

/** DIGEST_HEX_DIGITS: 64 bits of sha256, enough that no change to the pods goes unnoticed by chance. */
const DIGEST_HEX_DIGITS = 16;

/**
 * freedWhenUninstalled: the pod holds our finalizer and names an owner of the owner's kind and
 * group (toPodMeta keeps only such an ownerReference, whatever its version). A pod attributed by
 * its workflow label alone is not freed: nothing ties a label to the deleted CRD.
 */
export function freedWhenUninstalled(pod: PodMeta, finalizer: string): boolean {
  return pod.finalizers.includes(finalizer) && pod.owner !== null;
}

/**
 * selectionDigest is the first 16 hex digits of sha256 over the sorted lines
 * `namespace/name uid resourceVersion`, then the finalizer and the owner (`<resource>.<group>`
 * and kind). The order pods were listed in does not matter.
 */
export function selectionDigest(pods: ReadonlyArray<Pick<PodMeta, 'namespace' | 'name' | 'uid' | 'resourceVersion'>>, finalizer: string, owner: OwnerResource): string {
  const lines = pods.map((p) => `${p.namespace}/${p.name} ${p.uid} ${p.resourceVersion}`).sort();
  lines.push(`finalizer ${finalizer}`, `owner ${crdNameOf(owner)} ${owner.kind}`);
  return createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, DIGEST_HEX_DIGITS);
}

/** SELECTION_KEYS are the settings that choose the cluster and the pods: the confirming run must repeat them. */
const SELECTION_KEYS = ['kubeconfig', 'context', 'namespace', 'podSelector', 'instanceId', 'finalizer', 'ownerGroup', 'ownerVersion', 'ownerResource', 'ownerKind'];

/**
 * dryRunCommand is the command line of the dry run: the selection settings that differ from the
 * defaults as flags (whether they came from flags, the environment or a file).
 */
export function dryRunCommand(settings: Settings): string {
  const flags = KEYS.filter((k) => SELECTION_KEYS.includes(k.key) && k.show(settings) !== k.show(DEFAULTS)).map((k) => `--${k.flag} ${shellWord(k.show(settings))}`);
  return ['finalizer-sweeper sweep --owner-crd-deleted', ...flags].join(' ');
}

/** confirmCommand is the command line that confirms a dry run: the same, with its digest. */
export function confirmCommand(settings: Settings, digest: string): string {
  return `${dryRunCommand(settings)} --confirm ${digest}`;
}

/** shellWord quotes a value for a POSIX shell unless it needs none. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:=,@%+-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
