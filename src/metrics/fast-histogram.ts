// FastHistogram is a Prometheus histogram whose observe() costs a bucket search and three
// additions. prom-client's, on every observation of even a bound series, re-validates the label
// names, hashes the label set, and indexes its buckets by the bound turned into a string; with
// about four observations a removal (the patch's duration, the removal's latency, the queue's two)
// that was the largest share of the controller's metrics, beside the bare loop, in issue 46's
// profiles. What a scrape reads is the same: it registers in a prom-client Registry and hands it
// the values prom-client's own Histogram would, so that the exposition is byte for byte the same
// (fast-histogram.test.ts compares the two).

import type { Registry } from 'prom-client';

interface Series {
  labels: Record<string, string>;
  /** Observations per bucket, not cumulative; the last slot is above every bound (+Inf only). */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A series bound to its label values, as prom-client's labels() returns. */
export interface HistogramSeries {
  observe(value: number): void;
}

export interface FastHistogramOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  buckets: readonly number[];
  registers: Registry[];
}

/** The shape of one exported value, as prom-client's Registry reads it. */
interface MetricValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  exemplar: null | undefined;
}

export class FastHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #labelNames: readonly L[];
  readonly #bounds: readonly number[];
  /** By label values, in the order the series were first observed (prom-client's order). */
  #series = new Map<string, Series>();

  constructor(o: FastHistogramOptions<L>) {
    this.name = o.name;
    this.help = o.help;
    this.#labelNames = o.labelNames;
    this.#bounds = [...o.buckets];
    for (const r of o.registers) r.registerMetric(this as never);
  }

  /** labels binds a series; like prom-client's, it shows in the exposition from its first observation. */
  labels(labels: Record<L, string>): HistogramSeries {
    const key = JSON.stringify(this.#labelNames.map((n) => labels[n]));
    const own: Record<string, string> = {};
    for (const n of this.#labelNames) own[n] = labels[n];
    let series: Series | undefined;
    return {
      observe: (value) => {
        // Looked up again after a reset (prom-client's resetMetrics), which drops every series.
        if (series === undefined || this.#series.get(key) !== series) series = this.#seriesOf(key, own);
        this.#observe(series, value);
      },
    };
  }

  observe(labels: Record<L, string>, value: number): void {
    const key = JSON.stringify(this.#labelNames.map((n) => labels[n]));
    const own: Record<string, string> = {};
    for (const n of this.#labelNames) own[n] = labels[n];
    this.#observe(this.#seriesOf(key, own), value);
  }

  reset(): void {
    this.#series = new Map();
  }

  #seriesOf(key: string, labels: Record<string, string>): Series {
    let s = this.#series.get(key);
    if (s === undefined) this.#series.set(key, (s = { labels, counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 }));
    return s;
  }

  #observe(s: Series, value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    s.counts[i]!++;
    s.sum += value;
    s.count += 1;
  }

  /** getForPromString is what the Registry reads for the text format: the series' labels shared, `le` per bucket. */
  getForPromString(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: string }> {
    const values: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += s.counts[i]!;
        values.push({ labels: { le: this.#bounds[i]! }, sharedLabels: s.labels, value: cumulative, metricName: bucket, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** get is what the Registry reads for JSON: each value's labels with its series' merged in. */
  async get(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: string }> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, ...v }) => ({ ...v, labels: { ...v.labels, ...sharedLabels } }));
    return data;
  }
}
