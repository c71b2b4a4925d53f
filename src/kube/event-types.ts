// The events.k8s.io/v1 objects as the API takes them, and the sink that writes them: the API's
// side of the event recorder (events/recorder.ts), kept here so that kube/ imports nothing above it.

export type EventType = 'Normal' | 'Warning';

/** ObjectRef is the object an event is about (events.k8s.io/v1's `regarding`). */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid?: string;
}

/** EventBody is an events.k8s.io/v1 Event as sent to the API server. */
export interface EventBody {
  apiVersion: 'events.k8s.io/v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  eventTime: string;
  series?: Series;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  regarding: ObjectRef;
  note: string;
  type: EventType;
}

export interface Series {
  count: number;
  lastObservedTime: string;
}

/** EventSink writes events; both calls throw the API's errors. */
export interface EventSink {
  create(event: EventBody): Promise<void>;
  updateSeries(namespace: string, name: string, series: Series): Promise<void>;
}
