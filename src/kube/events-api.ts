// EventsApi writes events.k8s.io/v1 Events for the recorder (events/recorder.ts), through the one
// API budget at its least urgent priority: an Event waits behind every removal and owner read.

import type { ApiClient } from './client.ts';
import type { EventBody, EventSink, Series } from './event-types.ts';

/** EVENT_PRIORITY is the budget's last lane. */
const EVENT_PRIORITY = 9;

export class EventsApi implements EventSink {
  readonly #client: Pick<ApiClient, 'request'>;

  constructor(client: Pick<ApiClient, 'request'>) {
    this.#client = client;
  }

  async create(event: EventBody): Promise<void> {
    await this.#client.request({
      method: 'POST',
      path: path(event.metadata.namespace),
      body: event,
      priority: EVENT_PRIORITY,
      verb: 'create',
    });
  }

  async updateSeries(namespace: string, name: string, series: Series): Promise<void> {
    await this.#client.request({
      method: 'PATCH',
      path: `${path(namespace)}/${encodeURIComponent(name)}`,
      body: { series },
      contentType: 'application/merge-patch+json',
      priority: EVENT_PRIORITY,
      verb: 'patch',
      subject: { group: 'events.k8s.io', resource: 'events', name },
    });
  }
}

function path(namespace: string): string {
  return `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`;
}
