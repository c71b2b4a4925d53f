// startEvents wires the event recorder to the API, the metrics and the log for one command. No
// Event is written into a namespace being deleted: NamespaceLifecycle admission refuses every
// create there (403), and such a refusal is no sign of a broken install. Those the command knows
// are being deleted are skipped; one it did not know yet is refused, dropped and counted apart.

import { hostname } from 'node:os';
import type { Settings } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import { EventsApi } from '../kube/events-api.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { monotonicClock } from '../queue/clock.ts';
import { classify } from '../work/classify.ts';
import { isNamespaceTerminating } from '../kube/errors.ts';
import type { NamespaceDeletions } from '../namespaces/namespace-deletions.ts';
import { EventRecorder, type EventSpec, type WriteFailure } from './recorder.ts';
import { NO_EVENTS, removalEvents, type RemovalEvents } from './removal-events.ts';

/** REPORTING_CONTROLLER names us in every Event (events.k8s.io/v1's reportingController). */
export const REPORTING_CONTROLLER = 'finalizer-sweeper';

export interface Events {
  removals: RemovalEvents;
  /** close writes what is pending, for at most `timeoutMs`, and drops the rest. */
  close(timeoutMs: number): Promise<void>;
  /** skipNamespaces: no Event about an object of a namespace these say is being deleted is written (counted as skipped). */
  skipNamespaces(namespaces: NamespaceDeletions): void;
}

export function startEvents(o: { settings: Settings; client: ApiClient; metrics: Metrics; logger: Logger; command: 'controller' | 'sweep' }): Events {
  if (o.settings.events === 'none') return { removals: NO_EVENTS, close: async () => {}, skipNamespaces: () => {} };
  const logged = new Set<string>();
  const recorder = new EventRecorder({
    sink: new EventsApi(o.client),
    classify: eventWriteFailure,
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: o.command === 'controller' ? hostname() : `sweep@${hostname()}`,
    clock: monotonicClock,
    observer: {
      recorded: (spec, result) => o.metrics.event(spec.type, spec.reason, result),
      dropped: (spec, why, err) => {
        o.metrics.event(spec.type, spec.reason, 'dropped');
        // One line per cause: a cluster without RBAC for Events would otherwise log every one.
        if (logged.has(why)) return;
        logged.add(why);
        const error = err instanceof Error ? err.message : undefined;
        if (why === 'namespace-terminating') {
          o.logger.info({ reason: spec.reason, namespace: spec.regarding.namespace }, 'an Event was not written: its namespace is being deleted, where the API server refuses new objects; later ones are only counted in finalizer_sweeper_events_total{result="dropped"}');
          return;
        }
        o.logger.warn(
          { why, reason: spec.reason, ...(error !== undefined ? { error } : {}) },
          `an Event was dropped (${why}); later drops are only counted in finalizer_sweeper_events_total{result="dropped"}${why === 'refused' ? ': grant create and patch on events.k8s.io events, or set --events none' : ''}`,
        );
      },
    },
  });
  let skipped: NamespaceDeletions | null = null;
  const emit = (spec: EventSpec) => {
    if (skipped?.deletingSince(spec.regarding.namespace) != null) o.metrics.event(spec.type, spec.reason, 'skipped');
    else recorder.emit(spec);
  };
  return { removals: removalEvents(emit, o.settings), close: (ms) => recorder.close(ms), skipNamespaces: (namespaces) => void (skipped = namespaces) };
}

/**
 * eventWriteFailure reads an Event write's error with the reconcile step's rules (work/classify.ts):
 * a 404 naming the Event means the server expired it; 429, 5xx and network failures may pass;
 * NamespaceLifecycle's 403 is its own cause; any other answer (403 without RBAC for Events, 409,
 * 422, a resource not served) will not pass either.
 */
function eventWriteFailure(err: unknown): WriteFailure {
  if (isNamespaceTerminating(err)) return 'namespace-terminating';
  const kind = classify(err).kind;
  if (kind === 'not-found') return 'gone';
  return kind === 'throttled' || kind === 'transient' ? 'transient' : 'refused';
}
