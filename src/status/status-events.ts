// The Events the controller writes (events/start.ts: reportingController finalizer-sweeper), as
// `status` shows its latest: FinalizersRemoved on a Workflow, ForcedFinalizerRemoval and
// UnattributablePod warnings. events.k8s.io/v1 Events are core/v1 Events in one storage, and
// core/v1 selects them by field `reportingComponent` (kubernetes pkg/registry/core/event/strategy.go),
// so one list finds ours whichever API wrote them (kube/read-events.ts).

import { lastSeenMs, readEvents } from '../kube/read-events.ts';

/** StatusEvent is one of our Events, trimmed to what the report shows. */
export interface StatusEvent {
  type: string;
  reason: string;
  /** The object it is about, `Kind namespace/name`. */
  regarding: string;
  message: string;
  /** Occurrences (a series counts each). */
  count: number;
  /** When it was last seen (RFC 3339), or null when the Event says nothing. */
  lastSeen: string | null;
  /** The replica that wrote it (its pod's name). */
  from: string;
}

/** MAX_STATUS_EVENTS is how many of the newest Events the report keeps. */
export const MAX_STATUS_EVENTS = 10;

/** latestEvents trims core/v1 Events to StatusEvents, newest first, at most MAX_STATUS_EVENTS. */
export function latestEvents(items: readonly unknown[]): StatusEvent[] {
  const events = readEvents(items).sort((a, b) => lastSeenMs(b) - lastSeenMs(a));
  return events.slice(0, MAX_STATUS_EVENTS).map((e) => ({
    type: e.type,
    reason: e.reason,
    regarding: `${e.regarding.kind ?? '?'} ${e.regarding.namespace === null ? '' : `${e.regarding.namespace}/`}${e.regarding.name ?? '?'}`,
    message: e.message,
    count: e.count,
    lastSeen: e.lastSeen,
    from: e.reportingInstance ?? '',
  }));
}
