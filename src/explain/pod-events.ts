// A pod's Events, as `explain` shows them: one core/v1 list selected on the pod's UID finds those
// written through either API (kube/read-events.ts).

import { lastSeenMs, readEvents } from '../kube/read-events.ts';

/** PodEvent is one Event about the pod, trimmed to what the report shows. */
export interface PodEvent {
  type: string;
  reason: string;
  message: string;
  /** Occurrences (a series counts each). */
  count: number;
  /** When it was last seen (RFC 3339), or null when the Event says nothing. */
  lastSeen: string | null;
  /** Who reported it: reportingController, else source.component. */
  from: string;
}

/** MAX_EVENTS is how many of the newest Events the report keeps. */
export const MAX_EVENTS = 20;

/** podEvents trims core/v1 Events to PodEvents, oldest first, the newest MAX_EVENTS. */
export function podEvents(items: readonly unknown[]): PodEvent[] {
  const events = readEvents(items).sort((a, b) => lastSeenMs(a) - lastSeenMs(b));
  return events.slice(-MAX_EVENTS).map((e) => ({ type: e.type, reason: e.reason, message: e.message, count: e.count, lastSeen: e.lastSeen, from: e.reporter ?? '' }));
}
