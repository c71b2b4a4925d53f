// The Events the controller writes (events/start.ts: reportingController finalizer-sweeper), as
// `status` shows its latest: FinalizersRemoved on a Workflow, ForcedFinalizerRemoval and
// UnattributablePod warnings. events.k8s.io/v1 Events are core/v1 Events in one storage, and
// core/v1 selects them by field `reportingComponent` (kubernetes pkg/registry/core/event/strategy.go),
// so one list finds ours whichever API wrote them.

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
  const events = items.filter(isRecord).map(toStatusEvent);
  // By time, not by text: the two APIs' timestamps differ in precision.
  const at = (e: StatusEvent): number => (e.lastSeen === null ? 0 : Date.parse(e.lastSeen) || 0);
  events.sort((a, b) => at(b) - at(a));
  return events.slice(0, MAX_STATUS_EVENTS);
}

function toStatusEvent(e: Record<string, unknown>): StatusEvent {
  const series = isRecord(e['series']) ? e['series'] : {};
  const involved = isRecord(e['involvedObject']) ? e['involvedObject'] : {};
  return {
    type: str(e['type']) ?? '',
    reason: str(e['reason']) ?? '',
    regarding: `${str(involved['kind']) ?? '?'} ${str(involved['namespace']) ?? ''}${involved['namespace'] ? '/' : ''}${str(involved['name']) ?? '?'}`,
    message: str(e['message']) ?? '',
    count: num(series['count']) ?? num(e['count']) ?? 1,
    lastSeen: str(series['lastObservedTime']) ?? str(e['lastTimestamp']) ?? str(e['eventTime']) ?? str(e['firstTimestamp']),
    from: str(e['reportingInstance']) ?? '',
  };
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
