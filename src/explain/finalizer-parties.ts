// Who holds a pod by each of its finalizers, and what would remove it. `explain` names the party
// before anything else: a pod held by another party's finalizer is nobody's business of ours
// (rule 1: never another party's finalizer), and the operator needs to know whom to look at.

/** Party is who a finalizer belongs to. */
export type Party = 'ours' | 'job-controller' | 'kueue' | 'garbage-collector' | 'unknown';

/** FinalizerParty says who holds the pod by one finalizer, and what removes it. */
export interface FinalizerParty {
  finalizer: string;
  party: Party;
  /** Who, in words. */
  owner: string;
  /** What removes the finalizer, in words. */
  removedBy: string;
}

/** KNOWN are the finalizers other parties put on pods that operators meet beside Argo's. */
const KNOWN: Readonly<Record<string, Omit<FinalizerParty, 'finalizer'>>> = {
  // https://kubernetes.io/docs/concepts/workloads/controllers/job/#job-tracking-with-finalizers
  'batch.kubernetes.io/job-tracking': {
    party: 'job-controller',
    owner: "the Job controller (kube-controller-manager)",
    removedBy: "the Job controller, once it has counted the pod's end in its Job's status, or once the Job is gone",
  },
  // https://kueue.sigs.k8s.io/docs/tasks/run/plain_pods/
  'kueue.x-k8s.io/managed': {
    party: 'kueue',
    owner: "Kueue's controller",
    removedBy: 'Kueue, once the pod (or its pod group) has finished or been deleted and its Workload is accounted for; it needs Kueue running',
  },
  // https://kubernetes.io/docs/concepts/architecture/garbage-collection/#foreground-deletion
  foregroundDeletion: {
    party: 'garbage-collector',
    owner: 'the garbage collector (foreground deletion of this pod)',
    removedBy: 'the garbage collector, once every dependent that blocks owner deletion is gone',
  },
  orphan: {
    party: 'garbage-collector',
    owner: 'the garbage collector (orphan deletion of this pod)',
    removedBy: "the garbage collector, once it has removed this pod from its dependents' ownerReferences",
  },
};

/** finalizerParty says who holds a pod by `finalizer`; `ours` is the configured --finalizer. */
export function finalizerParty(finalizer: string, ours: string): FinalizerParty {
  if (finalizer === ours) {
    return {
      finalizer,
      party: 'ours',
      owner: "the workflow engine (Argo Workflows' pod finalizer), which finalizer-sweeper also removes",
      removedBy: "the engine once it has recorded the pod's status, or finalizer-sweeper by the decision below",
    };
  }
  const known = KNOWN[finalizer];
  if (known !== undefined) return { finalizer, ...known };
  return { finalizer, party: 'unknown', owner: 'unknown: no party this tool knows', removedBy: 'whatever controller put it there; finalizer-sweeper never removes it' };
}
