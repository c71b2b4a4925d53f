// core/v1 Events as read back. Events written through events.k8s.io/v1 are the same objects
// (one storage, two API versions: `regarding` is `involvedObject`, `note` is `message`, and a
// series is `series` in both), so one core/v1 list finds both kinds, and one reading serves them.

/** ReadEvent is one Event, trimmed to what the reports show. */
export interface ReadEvent {
  type: string;
  reason: string;
  message: string;
  /** Occurrences (a series counts each). */
  count: number;
  /** When it was last seen (RFC 3339), or null when the Event says nothing. */
  lastSeen: string | null;
  /** The object it is about. */
  regarding: { kind: string | null; namespace: string | null; name: string | null };
  /** reportingController (core/v1 `reportingComponent`), else the old `source.component`. */
  reporter: string | null;
  reportingInstance: string | null;
}

/** readEvents trims the items of a core/v1 Event list, skipping what is not an object. */
export function readEvents(items: readonly unknown[]): ReadEvent[] {
  return items.filter(isRecord).map(readEvent);
}

/** lastSeenMs orders Events by time, not by text: the two APIs' timestamps differ in precision ("…:01Z", "…:01.500000Z"). */
export function lastSeenMs(e: Pick<ReadEvent, 'lastSeen'>): number {
  return e.lastSeen === null ? 0 : Date.parse(e.lastSeen) || 0;
}

function readEvent(e: Record<string, unknown>): ReadEvent {
  const series = isRecord(e['series']) ? e['series'] : {};
  const source = isRecord(e['source']) ? e['source'] : {};
  const involved = isRecord(e['involvedObject']) ? e['involvedObject'] : {};
  return {
    type: str(e['type']) ?? '',
    reason: str(e['reason']) ?? '',
    message: str(e['message']) ?? '',
    count: num(series['count']) ?? num(e['count']) ?? 1,
    lastSeen: str(series['lastObservedTime']) ?? str(e['lastTimestamp']) ?? str(e['eventTime']) ?? str(e['firstTimestamp']),
    regarding: { kind: str(involved['kind']), namespace: str(involved['namespace']), name: str(involved['name']) },
    reporter: str(e['reportingComponent']) ?? str(source['component']),
    reportingInstance: str(e['reportingInstance']),
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
