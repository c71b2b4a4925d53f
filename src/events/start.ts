// startEvents wires the event recorder to the API, the metrics and the log for one command.

import { hostname } from 'node:os';
import type { Settings } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import { EventsApi } from '../kube/events-api.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { monotonicClock } from '../queue/clock.ts';
import { classify } from '../work/classify.ts';
import { EventRecorder, type WriteFailure } from './recorder.ts';
import { NO_EVENTS, removalEvents, type RemovalEvents } from './removal-events.ts';

/** REPORTING_CONTROLLER names us in every Event (events.k8s.io/v1's reportingController). */
export const REPORTING_CONTROLLER = 'finalizer-sweeper';

export interface Events {
  removals: RemovalEvents;
  /** close writes what is pending, for at most `timeoutMs`, and drops the rest. */
  close(timeoutMs: number): Promise<void>;
}

export function startEvents(o: { settings: Settings; client: ApiClient; metrics: Metrics; logger: Logger; command: 'controller' | 'sweep' }): Events {
  if (o.settings.events === 'none') return { removals: NO_EVENTS, close: async () => {} };
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
        o.logger.warn(
          { why, reason: spec.reason, ...(error !== undefined ? { error } : {}) },
          `an Event was dropped (${why}); later drops are only counted in finalizer_sweeper_events_total{result="dropped"}${why === 'refused' ? ': grant create and patch on events.k8s.io events, or set --events none' : ''}`,
        );
      },
    },
  });
  return { removals: removalEvents((spec) => recorder.emit(spec), o.settings), close: (ms) => recorder.close(ms) };
}

/**
 * eventWriteFailure reads an Event write's error with the reconcile step's rules (work/classify.ts):
 * a 404 naming the Event means the server expired it; 429, 5xx and network failures may pass;
 * any other answer (403 without RBAC for Events, 409, 422, a resource not served) will not.
 */
function eventWriteFailure(err: unknown): WriteFailure {
  const kind = classify(err).kind;
  if (kind === 'not-found') return 'gone';
  return kind === 'throttled' || kind === 'transient' ? 'transient' : 'refused';
}
