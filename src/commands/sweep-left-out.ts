// The instance-ID trap seen from a sweep: run with a selector that leaves out the pods of the Argo
// it is meant for (no --instance-id where Argo has one, or another one), a sweep lists nothing,
// frees nothing and says "0 pods listed". So after its own list it looks once for workflow pods
// left out for their instance ID alone, with the controller's probe (src/controller/
// other-instances.ts: at most 17 small lists per namespace), and its summary names them with the
// setting that would include them. They change no exit code: where several Argo instances share a
// cluster the others' pods are routine, and a sweep that did what it was asked has succeeded.

import type { Settings } from '../config/settings.ts';
import { COUNT_LIMIT, findLeftOutPods, NO_INSTANCE, type PodLister } from '../controller/other-instances.ts';
import type { Logger } from '../log.ts';

/** OtherInstancePods are the workflow pods of one other instance ID (NO_INSTANCE: without one) that the sweep's selector left out. */
export interface OtherInstancePods {
  instanceId: string;
  /** Counted up to COUNT_LIMIT per namespace: `atLeast` when a count stopped there. */
  pods: number;
  atLeast: boolean;
  /** Of them, Terminating with our finalizer: what this sweep would have been asked about. */
  waiting: number;
  /** A few of them, namespace/name, those waiting first. */
  examples: string[];
}

/** findOtherInstancePods looks once; null when the look failed (logged), which the summary says. */
export async function findOtherInstancePods(list: PodLister, s: Settings, logger: Logger, signal: AbortSignal): Promise<OtherInstancePods[] | null> {
  try {
    const found = await findLeftOutPods(list, s, signal);
    return [...found].map(([instanceId, f]) => ({ instanceId, pods: f.pods, atLeast: f.pods >= COUNT_LIMIT, waiting: f.waiting, examples: f.examples }));
  } catch (err) {
    if (!signal.aborted) logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'cannot look for workflow pods of other instance IDs: the summary cannot say whether the selector left any out');
    return null;
  }
}

/** otherInstanceLines are the human summary's lines about them: what was left out, and how to include it. */
export function otherInstanceLines(found: readonly OtherInstancePods[] | null): string[] {
  if (found === null) return ['workflow pods of other instance IDs: not looked for (see the log)'];
  return found.map((o) => {
    const which = o.instanceId === NO_INSTANCE ? 'without an instance ID' : `of instance ID ${o.instanceId}`;
    const include = o.instanceId === NO_INSTANCE ? 'run without --instance-id (no instanceId in the config file)' : `--instance-id ${o.instanceId} (instanceId: ${o.instanceId} in the config file)`;
    const examples = o.examples.length > 0 ? ` (${o.examples.join(', ')}${o.pods > o.examples.length ? ', ...' : ''})` : '';
    return `left out by the selector: ${o.pods}${o.atLeast ? ' or more' : ''} workflow pods ${which}, ${o.waiting === 0 ? 'none' : o.waiting} of them Terminating with the finalizer${examples}; to include them: ${include}`;
  });
}
