// EventsApi writes events.k8s.io/v1 Events for the recorder (events/recorder.ts), through the one
// API budget at its least urgent priority: an Event waits behind every removal and owner read.

import type { ApiClient } from './client.ts';
import { ApiError, isObjectNotFound, isTooManyRequests } from './errors.ts';
import type { EventBody, EventSink, Series, WriteFailure } from '../events/recorder.ts';

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
      path: `${path(event.metadata.namespace)}`,
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
    });
  }
}

function path(namespace: string): string {
  return `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`;
}

/**
 * classifyEventFailure: a 404 naming the Event means it expired (the server's event TTL); 429,
 * 5xx and network failures may pass; any other answer (403 without RBAC for Events, 422) will not.
 */
export function classifyEventFailure(err: unknown): WriteFailure {
  if (isObjectNotFound(err)) return 'gone';
  if (isTooManyRequests(err)) return 'transient';
  if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 401) return 'refused';
  return 'transient';
}
