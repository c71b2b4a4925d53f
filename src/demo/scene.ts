// The demo's scene: a namespace of Argo-shaped Workflows and finalizer-held pods in every state
// the controller must tell apart, each pod labelled with what must happen to it.

import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../testbed/fixtures.ts';
import type { Cluster } from '../testbed/cluster.ts';

export const FOREIGN_FINALIZER = 'example.com/audit-log';

/** Category groups the scene's pods by what the controller must do with them. */
export interface Category {
  name: string;
  /** freed: our finalizer must go; kept: it must stay (the engine still needs the status). */
  expect: 'freed' | 'kept';
  pods: string[];
}

export interface SceneSize {
  workflowsPerKind: number;
  podsPerWorkflow: number;
}

/**
 * createScene creates the Workflows and pods, then deletes the doomed Workflows so that the
 * garbage collector marks their pods Terminating, as after `argo delete` or a namespace cleanup.
 */
export async function createScene(cluster: Cluster, namespace: string, size: SceneSize): Promise<Category[]> {
  const categories: Category[] = [
    { name: 'orphans: Workflow deleted', expect: 'freed', pods: [] },
    { name: 'orphans with another finalizer (it stays)', expect: 'freed', pods: [] },
    { name: 'recorded: Workflow completed', expect: 'freed', pods: [] },
    { name: 'recorded: pod labelled completed', expect: 'freed', pods: [] },
    { name: 'live Workflow, pod not yet recorded', expect: 'kept', pods: [] },
  ];
  const [orphans, orphansForeign, ownerDone, podDone, unrecorded] = categories as [Category, Category, Category, Category, Category];
  const pods: PodObject[] = [];
  const doomed: string[] = [];

  const make = async (kind: 'doomed' | 'done' | 'live', i: number) => {
    const name = `${kind}-${i}`;
    const wf = await cluster.createWorkflow(newWorkflow({ namespace, name, completed: kind === 'done' }));
    const owner = { name, uid: wf.metadata.uid as string };
    for (let p = 0; p < size.podsPerWorkflow; p++) {
      const podName = `${name}-${p}`;
      const foreign = kind === 'doomed' && p % 5 === 0;
      const recorded = kind === 'live' && p % 5 < 3;
      pods.push(newPod({ namespace, name: podName, workflow: owner, completed: recorded, finalizers: foreign ? [FOREIGN_FINALIZER, ARGO_FINALIZER] : [ARGO_FINALIZER] }));
      const into = kind === 'doomed' ? (foreign ? orphansForeign : orphans) : kind === 'done' ? ownerDone : recorded ? podDone : unrecorded;
      into.pods.push(podName);
    }
    if (kind === 'doomed') doomed.push(name);
  };
  for (let i = 0; i < size.workflowsPerKind; i++) {
    await make('doomed', i);
    await make('done', i);
    await make('live', i);
  }
  await cluster.createPods(pods);
  for (const name of doomed) await cluster.deleteWorkflow(namespace, name);
  return categories;
}

/** ourFinalizerHeld tells, from a pod list, which pods still carry our finalizer. */
export function ourFinalizerHeld(pods: PodObject[]): Set<string> {
  return new Set(pods.filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).map((p) => p.metadata.name));
}
