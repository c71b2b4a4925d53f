// RemovalEvents says, as Kubernetes Events, who removed finalizers and why, at the level the
// --events setting asks for:
//   all:      a Normal event on the owner Workflow per reason, aggregated over its pods (one Event
//             whose series.count is the number of pods freed), plus everything below;
//   warnings: a Warning on each pod freed by --force-after (and on its Workflow, aggregated), a
//             Warning on each pod that keeps our finalizer because it names no owner at all (such
//             a pod names no Workflow to put it on), and one on each Workflow whose node status
//             cannot be read (its pods wait);
//   none:     nothing.
// `kubectl describe workflow` and `kubectl get events` then show what finalizer-sweeper did.

import { formatDuration } from '../config/duration.ts';
import type { EventsLevel, Reason, Settings } from '../config/settings.ts';
import type { PodMeta } from '../kube/objects.ts';
import type { EventSpec } from './recorder.ts';
import type { ObjectRef } from '../kube/event-types.ts';
import type { Evidence } from '../decide/decide.ts';

export interface RemovalEvents {
  removed(pod: PodMeta, reason: Reason, evidence: Evidence): void;
  unattributable(pod: PodMeta): void;
  /** wrongOwnerKind: the pod shows the owner settings to name the wrong kind (owner-kind.ts); `why` is the refusal's line. */
  wrongOwnerKind(pod: Pick<PodMeta, 'namespace' | 'name' | 'uid'>, why: string): void;
  /** unreadableStatus: the owner's stored node status cannot be read (src/argo); `why` says what is wrong with it. */
  unreadableStatus(owner: { namespace: string; name: string; uid: string }, why: string): void;
}

export const NO_EVENTS: RemovalEvents = { removed: () => {}, unattributable: () => {}, wrongOwnerKind: () => {}, unreadableStatus: () => {} };

const ACTION = 'RemoveFinalizer';

export function removalEvents(emit: (spec: EventSpec) => void, settings: Pick<Settings, 'events' | 'finalizer' | 'owner' | 'conventions' | 'forceAfterMs'>): RemovalEvents {
  const level: EventsLevel = settings.events;
  if (level === 'none') return NO_EVENTS;
  const { finalizer, owner } = settings;
  const forceAfter = settings.forceAfterMs === null ? '' : ` (${formatDuration(settings.forceAfterMs)})`;
  // Only an ownerReference says which Workflow a pod belongs to: a label names one by name, and
  // an Event put on that name could land on a newer Workflow of the same name (Events match
  // their object by UID where they have one, by name where not).
  const ownerRef = (pod: PodMeta): ObjectRef | null =>
    pod.owner === null ? null : { apiVersion: `${owner.group}/${owner.version}`, kind: owner.kind, namespace: pod.namespace, name: pod.owner.name, uid: pod.owner.uid };
  const podRef = (pod: Pick<PodMeta, 'namespace' | 'name' | 'uid'>): ObjectRef => ({ apiVersion: 'v1', kind: 'Pod', namespace: pod.namespace, name: pod.name, uid: pod.uid });

  return {
    removed(pod, reason, evidence) {
      const workflow = ownerRef(pod);
      if (reason === 'stale') {
        emit({
          regarding: podRef(pod),
          type: 'Warning',
          reason: 'ForcedFinalizerRemoval',
          action: ACTION,
          note: `Removed finalizer ${finalizer}: the pod was Terminating for longer than --force-after${forceAfter} and its ${owner.kind} had not recorded its status`,
        });
        if (workflow !== null) {
          emit({
            regarding: workflow,
            type: 'Warning',
            reason: 'ForcedFinalizerRemoval',
            action: ACTION,
            note: `Removed finalizer ${finalizer} from pods Terminating for longer than --force-after${forceAfter} whose status this ${owner.kind} had not recorded (series count: pods)`,
          });
        }
        return;
      }
      if (level !== 'all' || workflow === null) return;
      const by = reason === 'owner-gone' || reason === 'namespace-deleting' ? '' : ` (${RECORD[evidence] ?? evidence})`;
      emit({ regarding: workflow, type: 'Normal', reason: 'FinalizersRemoved', action: ACTION, note: `Removed finalizer ${finalizer} from ${WHY[reason](owner.kind)}${by} (series count: pods)` });
    },
    unattributable(pod) {
      emit({
        regarding: podRef(pod),
        type: 'Warning',
        reason: 'UnattributablePod',
        action: 'KeepFinalizer',
        note: `Pod carries finalizer ${finalizer} but names no ${owner.kind} (no controlling ownerReference, no ${settings.conventions.workflowLabel} label): finalizer-sweeper keeps the finalizer; remove it by hand once its engine is done with the pod`,
      });
    },
    wrongOwnerKind(pod, why) {
      emit({ regarding: podRef(pod), type: 'Warning', reason: 'WrongOwnerKind', action: 'KeepFinalizer', note: why });
    },
    unreadableStatus(o, why) {
      emit({
        regarding: { apiVersion: `${owner.group}/${owner.version}`, kind: owner.kind, namespace: o.namespace, name: o.name, uid: o.uid },
        type: 'Warning',
        reason: 'NodeStatusUnreadable',
        action: 'KeepFinalizer',
        note: `finalizer-sweeper cannot read this ${owner.kind}'s node status (${why}): none of its pods loses finalizer ${finalizer} on it`,
      });
    },
  };
}

/** RECORD says which record showed a pod recorded: each gets an Event series of its own. */
const RECORD: Partial<Record<Evidence, string>> = {
  'pod-label': 'each pod labelled completed',
  'workflow-label': 'the Workflow labelled completed',
  'node-status': 'their nodes finished in its stored status',
};

const WHY: Record<Exclude<Reason, 'stale'>, (kind: string) => string> = {
  'owner-gone': (kind) => `this ${kind}'s pods: the ${kind} is gone or being deleted`,
  'namespace-deleting': (kind) => `this ${kind}'s pods: their namespace is being deleted`,
  'pod-deleting': (kind) => `this ${kind}'s Terminating pods: the ${kind} has recorded their status`,
  recorded: (kind) => `this ${kind}'s pods: the ${kind} has recorded their status`,
};
