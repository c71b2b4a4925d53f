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

/**
 * reportedBy says whether an Event was written by this install: the controller's
 * reportingInstance is its host name, in a pod the pod's name, `<deployment>-<template hash>-
 * <suffix>`, so every pod the Deployment ran counts, those of earlier rollouts included; and the
 * host its Lease names as leader (`leaderHost`), wherever it runs. Every install reports as
 * component finalizer-sweeper, and a sweep run by hand as `sweep@<host>`: without this, status
 * showed them all as this install's. Two installs whose Deployments share a name and whose
 * namespaces overlap cannot be told apart by their Events.
 */
export function reportedBy(deployment: string, leaderHost: string | null = null): (reportingInstance: string | null) => boolean {
  return (instance) => instance !== null && (instance.startsWith(`${deployment}-`) || instance === leaderHost);
}

/** latestEvents trims core/v1 Events to StatusEvents, newest first, at most MAX_STATUS_EVENTS, of those whose reportingInstance `ours` accepts. */
export function latestEvents(items: readonly unknown[], ours: (reportingInstance: string | null) => boolean = () => true): StatusEvent[] {
  const events = readEvents(items).filter((e) => ours(e.reportingInstance)).sort((a, b) => lastSeenMs(b) - lastSeenMs(a));
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
