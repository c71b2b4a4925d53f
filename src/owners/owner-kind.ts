// Whether the pods the settings select are controlled by the owner kind at all. Discovery proves
// that the owner settings name a resource serving the configured kind (owner-settings.ts), not
// that this kind owns the pods: `--owner-resource cronworkflows --owner-kind CronWorkflow` is
// served and self-consistent, yet Argo's pods are controlled by their Workflow. Such settings
// free nothing, rightly (a pod controlled by another kind is never attributed, src/cache/trim.ts),
// and would do so in silence for good. Only the pods can tell: when the selected pods that carry
// our finalizer are controlled by another kind of the owner's group and none by the configured
// kind, the settings name the wrong kind. A single pod of the configured kind settles it the
// other way: pods of several kinds side by side (a CronWorkflow's and a Workflow's, were an engine
// to do that) are no sign of a mistake.

import type { OwnerResource } from '../config/settings.ts';
import type { MetaObject, OwnerRef } from '../kube/objects.ts';
import { groupOf, isOwnerRef } from '../cache/trim.ts';
import { OwnerSettingsRefused } from './settings-proof.ts';
import { settingsFlags } from './owner-settings.ts';

/**
 * Ownership is what a pod says of its owner: `unselected` (it does not carry our finalizer),
 * `owner` (an ownerReference of the configured kind and group, as toPodMeta attributes it), a
 * `foreign` kind (its controlling ownerReference is another kind of the owner's group), or `none`
 * (no controller, or one of another group: a ReplicaSet's pod says nothing of the owner kind).
 */
export type Ownership = { kind: 'unselected' } | { kind: 'owner' } | { kind: 'foreign'; ownerKind: string } | { kind: 'none' };

/** ownershipOf reads a pod as the API server sent it (metadata suffices). */
export function ownershipOf(obj: MetaObject, owner: Pick<OwnerResource, 'group' | 'kind'>, finalizer: string): Ownership {
  const meta = (obj as Partial<MetaObject> | null)?.metadata;
  const finalizers: unknown = meta?.finalizers;
  if (!Array.isArray(finalizers) || !finalizers.includes(finalizer)) return { kind: 'unselected' };
  const refs: unknown[] = Array.isArray(meta?.ownerReferences) ? meta.ownerReferences : [];
  const sameGroup = refs.filter((r): r is OwnerRef => isOwnerRef(r) && groupOf(r.apiVersion) === owner.group);
  if (sameGroup.some((r) => r.kind === owner.kind)) return { kind: 'owner' };
  const controller = sameGroup.find((r) => r.controller === true);
  return controller === undefined ? { kind: 'none' } : { kind: 'foreign', ownerKind: controller.kind };
}

/** OwnerKindTally counts the selected pods by what they say of their owner. */
export interface OwnerKindTally {
  /** Selected pods attributed to the configured kind. */
  owned: number;
  /** Selected pods controlled by another kind of the owner's group, by kind: how many (distinct pods, up to MAX_COUNTED), and one of them. */
  foreign: ReadonlyMap<string, { pods: number; example: string }>;
}

export type OwnerKindVerdict =
  /** A selected pod is the configured kind's: the settings name the pods' owner. */
  | { kind: 'confirmed' }
  /** No selected pod says either way (none yet, or none controlled by the owner's group). */
  | { kind: 'undecided' }
  /** Selected pods are controlled by other kinds of the owner's group, none by the configured kind. */
  | { kind: 'wrong'; foreign: ReadonlyMap<string, { pods: number; example: string }> };

/** judgeOwnerKind is the rule, on a tally. */
export function judgeOwnerKind(t: OwnerKindTally): OwnerKindVerdict {
  if (t.owned > 0) return { kind: 'confirmed' };
  if (t.foreign.size > 0) return { kind: 'wrong', foreign: t.foreign };
  return { kind: 'undecided' };
}

/** MAX_COUNTED bounds the pods counted per foreign kind: the count is only for the message. */
export const MAX_COUNTED = 1_000;

/** OwnerKindRefused refuses the owner settings on the pods' word; examplePod ("namespace/name") is one of the pods. */
export class OwnerKindRefused extends OwnerSettingsRefused {
  readonly examplePod: string;

  constructor(examplePod: string, message: string) {
    super(message);
    this.examplePod = examplePod;
  }
}

/**
 * ownerKindRefusal words a `wrong` verdict as the owner settings' other refusals are worded
 * (settings-proof.ts), naming the kinds found and the settings to change.
 */
export function ownerKindRefusal(owner: OwnerResource, finalizer: string, v: Extract<OwnerKindVerdict, { kind: 'wrong' }>): OwnerKindRefused {
  const kinds = [...v.foreign].sort((a, b) => b[1].pods - a[1].pods);
  const found = kinds.map(([kind, f]) => `${kind} (${f.pods >= MAX_COUNTED ? `${MAX_COUNTED} or more` : f.pods} pod${f.pods === 1 ? '' : 's'}, e.g. ${f.example})`).join(', ');
  const group = owner.group === '' ? 'the core group' : owner.group;
  return new OwnerKindRefused(
    kinds[0]?.[1].example ?? '',
    `the owner settings do not name the pods' owner (${settingsFlags(owner)}): no selected pod carrying ${finalizer} is controlled by a ${owner.kind}, ` +
      `and some are controlled by another kind of ${group}: ${found}; set --owner-kind and --owner-resource (ownerKind, ownerResource in the config file) ` +
      `to the kind that controls them and its resource (\`kubectl api-resources --api-group ${owner.group}\` lists both)`,
  );
}

/**
 * OwnerKindCheck tallies the selected pods it is shown, one pod counted once (by UID), and judges
 * them. It holds at most MAX_COUNTED UIDs per foreign kind, and nothing once confirmed.
 */
export class OwnerKindCheck {
  readonly #owner: OwnerResource;
  readonly #finalizer: string;
  #owned = 0;
  readonly #foreign = new Map<string, { pods: number; example: string; uids: Set<string> }>();

  constructor(owner: OwnerResource, finalizer: string) {
    this.#owner = owner;
    this.#finalizer = finalizer;
  }

  /** note counts one pod as the API server sent it; it says what the pod showed. */
  note(obj: MetaObject): Ownership {
    const o = ownershipOf(obj, this.#owner, this.#finalizer);
    if (o.kind === 'owner') {
      this.#owned++;
      this.#foreign.clear();
    } else if (o.kind === 'foreign' && this.#owned === 0) {
      let f = this.#foreign.get(o.ownerKind);
      if (f === undefined) this.#foreign.set(o.ownerKind, (f = { pods: 0, example: `${String(obj.metadata.namespace)}/${obj.metadata.name}`, uids: new Set() }));
      if (f.uids.size < MAX_COUNTED && !f.uids.has(obj.metadata.uid)) {
        f.uids.add(obj.metadata.uid);
        f.pods = f.uids.size;
      }
    }
    return o;
  }

  verdict(): OwnerKindVerdict {
    return judgeOwnerKind({ owned: this.#owned, foreign: this.#foreign });
  }

  /** refusal is the refusal a `wrong` verdict makes; null otherwise. */
  refusal(): OwnerKindRefused | null {
    const v = this.verdict();
    return v.kind === 'wrong' ? ownerKindRefusal(this.#owner, this.#finalizer, v) : null;
  }
}
