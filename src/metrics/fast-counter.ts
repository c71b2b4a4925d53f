// FastCounter and FastGauge are Prometheus counters and gauges whose updates, on a bound series,
// are one addition or assignment. prom-client's, even bound by labels(), hash the label set and
// validate its names on every update, and a removal updates about six (its result, the patch's
// request under two names, the queue's adds and its depth twice). A scrape reads the same as from
// prom-client's own (fast-counter.test.ts compares the exposition and the JSON).

import type { Registry } from 'prom-client';

interface Entry {
  value: number;
  labels: Record<string, string>;
}

export interface FastMetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

class LabelledValues<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly aggregator: string;
  readonly #type: 'counter' | 'gauge';
  readonly #labelNames: readonly L[];
  /** By label values, in the order the series were first written (prom-client's order). */
  #entries = new Map<string, Entry>();

  constructor(type: 'counter' | 'gauge', o: FastMetricOptions<L>) {
    this.#type = type;
    this.name = o.name;
    this.help = o.help;
    this.aggregator = 'sum';
    this.#labelNames = o.labelNames;
    for (const r of o.registers) r.registerMetric(this as never);
  }

  get type(): string {
    return this.#type;
  }

  /** generation counts resets, so that a bound series knows to look itself up again. */
  protected generation = 0;

  reset(): void {
    this.#entries = new Map();
    this.generation++;
  }

  get(): Promise<{ help: string; name: string; type: string; values: Entry[]; aggregator: string }> {
    return Promise.resolve({ help: this.help, name: this.name, type: this.#type, values: [...this.#entries.values()], aggregator: this.aggregator });
  }

  /** entry is the series of these labels, made (at 0) the first time. */
  protected entry(labels: Record<L, string>): Entry {
    const key = JSON.stringify(this.#labelNames.map((n) => labels[n]));
    let e = this.#entries.get(key);
    if (e === undefined) this.#entries.set(key, (e = { value: 0, labels: { ...labels } }));
    return e;
  }
}

export class FastCounter<L extends string> extends LabelledValues<L> {
  constructor(o: FastMetricOptions<L>) {
    super('counter', o);
  }

  inc(labels: Record<L, string>, value = 1): void {
    add(this.entry(labels), value);
  }

  labels(labels: Record<L, string>): { inc(value?: number): void } {
    let e: Entry | null = null;
    let generation = -1;
    return {
      inc: (value = 1) => {
        if (generation !== this.generation) [e, generation] = [this.entry(labels), this.generation];
        add(e!, value);
      },
    };
  }
}

export class FastGauge<L extends string> extends LabelledValues<L> {
  constructor(o: FastMetricOptions<L>) {
    super('gauge', o);
  }

  set(labels: Record<L, string>, value: number): void {
    assign(this.entry(labels), value);
  }

  labels(labels: Record<L, string>): { set(value: number): void } {
    let e: Entry | null = null;
    let generation = -1;
    return {
      set: (value) => {
        if (generation !== this.generation) [e, generation] = [this.entry(labels), this.generation];
        assign(e!, value);
      },
    };
  }
}

function add(e: Entry, value: number): void {
  if (value && !Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
  if (value < 0) throw new Error('It is not possible to decrease a counter');
  e.value += value;
}

function assign(e: Entry, value: number): void {
  if (typeof value !== 'number') throw new TypeError(`Value is not a valid number: ${String(value)}`);
  e.value = value;
}
