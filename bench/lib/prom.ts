// Reads a Prometheus text exposition (the controller's /metrics) into samples that can be summed.

/** Sample is one series: its name, labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Scrape is one reading of /metrics. */
export class Scrape {
  readonly samples: Sample[];

  constructor(text: string) {
    this.samples = parse(text);
  }

  /** sum adds up the series of `name` whose labels match every given label. */
  sum(name: string, match: Record<string, string> = {}): number {
    let total = 0;
    for (const s of this.samples) {
      if (s.name !== name) continue;
      if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) total += s.value;
    }
    return total;
  }
}

/** scrape fetches and parses a /metrics endpoint; it fails after timeoutMs. */
export async function scrape(url: string, timeoutMs = 5_000): Promise<Scrape> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return new Scrape(await res.text());
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] ?? ''] = unescapeLabel(l[2] ?? '');
    samples.push({ name: m[1] ?? '', labels, value: parseValue(m[3] ?? '') });
  }
  return samples;
}

/** unescapeLabel undoes a label value's escapes: \\ for a backslash, \" for a quote, \n for a newline. */
function unescapeLabel(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** parseValue reads a sample value: a Go float, which Number reads except for +Inf and -Inf. */
function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}
