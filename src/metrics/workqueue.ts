// The work queue's metrics, under client-go's names and buckets (k8s.io/client-go/util/workqueue,
// registered by controller-runtime's metrics/workqueue.go), so that existing workqueue dashboards
// and alerts work unchanged. The depth also carries a `priority` label, as controller-runtime's
// priority queue reports it.

import { Gauge, type Registry } from 'prom-client';
import { FastCounter, FastGauge } from './fast-counter.ts';
import { FastHistogram } from './fast-histogram.ts';

/** QueueObserver is what the work queue reports as it runs; WorkqueueMetrics implements it. */
export interface QueueObserver {
  /** added: a key was newly queued (a duplicate add that was merged does not count). */
  added(priority: number): void;
  /** depthChanged: the number of keys waiting at this priority is now `depth`. */
  depthChanged(priority: number, depth: number): void;
  /** queued: a key waited this long between its add and a worker taking it. */
  queued(seconds: number): void;
  /** worked: a worker held a key this long. */
  worked(seconds: number): void;
  /** retried: a key was put back with a backoff delay. */
  retried(): void;
}

/** QueueProgress is read at scrape time: how long the work now in progress has been running. */
export interface QueueProgress {
  /** unfinishedWorkSeconds: the sum of the running times of the keys workers hold now. */
  unfinishedWorkSeconds(): number;
  /** longestRunningProcessorSeconds: the running time of the oldest key a worker holds now. */
  longestRunningProcessorSeconds(): number;
  /** inFlight: the keys workers hold now, i.e. the workers busy. */
  inFlight(): number;
}

/** WORKQUEUE_DURATION_BUCKETS is client-go's ExponentialBuckets(10e-9, 10, 10), written out exactly. */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = [
  1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10,
];

/** WorkqueueMetrics registers the workqueue_* metrics of one named queue in `registry`. */
export class WorkqueueMetrics implements QueueObserver {
  readonly #name: string;
  readonly #depth: FastGauge<'name' | 'priority'>;
  readonly #adds: FastCounter<'name'>;
  readonly #queueDuration: FastHistogram<'name'>;
  readonly #workDuration: FastHistogram<'name'>;
  readonly #retries: FastCounter<'name'>;
  /**
   * The series of this queue, bound once: a label set is looked up only then, and
   * each removal updates the queue's metrics about five times.
   */
  readonly #series: { adds: { inc(): void }; retries: { inc(): void }; queued: { observe(v: number): void }; worked: { observe(v: number): void }; depth: Map<number, { set(v: number): void }> };
  #progress: QueueProgress | null = null;

  constructor(registry: Registry, name: string) {
    this.#name = name;
    const registers = [registry];
    this.#depth = new FastGauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name', 'priority'],
      registers,
    });
    this.#adds = new FastCounter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'], registers });
    this.#queueDuration = new FastHistogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    });
    this.#workDuration = new FastHistogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    });
    this.#retries = new FastCounter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'], registers });
    this.#progressGauge(
      registry,
      'workqueue_unfinished_work_seconds',
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      (p) => p.unfinishedWorkSeconds(),
    );
    this.#progressGauge(
      registry,
      'workqueue_longest_running_processor_seconds',
      'How many seconds has the longest running processor for workqueue been running.',
      (p) => p.longestRunningProcessorSeconds(),
    );
    // controller-runtime's name for the workers busy now, read by its dashboards and by our alerts.
    const active: Gauge<'controller'> = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
      collect: () => active.set({ controller: this.#name }, this.#progress === null ? 0 : this.#progress.inFlight()),
    });
    // Zero series from the start, so that rate() and absent() see the queue before its first add.
    this.#adds.inc({ name }, 0);
    this.#retries.inc({ name }, 0);
    this.#series = {
      adds: this.#adds.labels({ name }),
      retries: this.#retries.labels({ name }),
      queued: this.#queueDuration.labels({ name }),
      worked: this.#workDuration.labels({ name }),
      depth: new Map(),
    };
  }

  /** trackProgress names the source the two in-progress gauges read at each scrape. */
  trackProgress(source: QueueProgress): void {
    this.#progress = source;
  }

  added(_priority: number): void {
    this.#series.adds.inc();
  }

  depthChanged(priority: number, depth: number): void {
    let series = this.#series.depth.get(priority);
    if (series === undefined) this.#series.depth.set(priority, (series = this.#depth.labels({ name: this.#name, priority: String(priority) })));
    series.set(depth);
  }

  queued(seconds: number): void {
    this.#series.queued.observe(seconds);
  }

  worked(seconds: number): void {
    this.#series.worked.observe(seconds);
  }

  retried(): void {
    this.#series.retries.inc();
  }

  #progressGauge(registry: Registry, name: string, help: string, read: (p: QueueProgress) => number): void {
    const gauge: Gauge<'name'> = new Gauge({
      name,
      help,
      labelNames: ['name'],
      registers: [registry],
      collect: () => gauge.set({ name: this.#name }, this.#progress === null ? 0 : read(this.#progress)),
    });
  }
}
