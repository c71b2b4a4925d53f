// A pod's Events, as `explain` shows them. Events written through events.k8s.io/v1 are the same
// objects as core/v1 Events (one storage, two API versions: `regarding` is `involvedObject`,
// `note` is `message`), so one core/v1 list selected on the pod's UID finds both kinds.

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
  const events = items.filter(isRecord).map(toPodEvent);
  // By time, not by text: the two APIs' timestamps differ in precision ("…:01Z", "…:01.500000Z").
  const at = (e: PodEvent): number => (e.lastSeen === null ? 0 : Date.parse(e.lastSeen) || 0);
  events.sort((a, b) => at(a) - at(b));
  return events.slice(-MAX_EVENTS);
}

function toPodEvent(e: Record<string, unknown>): PodEvent {
  const series = isRecord(e['series']) ? e['series'] : {};
  const source = isRecord(e['source']) ? e['source'] : {};
  const count = num(series['count']) ?? num(e['count']) ?? 1;
  const lastSeen = str(series['lastObservedTime']) ?? str(e['lastTimestamp']) ?? str(e['eventTime']) ?? str(e['firstTimestamp']);
  return {
    type: str(e['type']) ?? '',
    reason: str(e['reason']) ?? '',
    message: str(e['message']) ?? '',
    count,
    lastSeen,
    from: str(e['reportingComponent']) ?? str(source['component']) ?? '',
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
