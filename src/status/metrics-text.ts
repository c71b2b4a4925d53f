// The Prometheus text exposition format (version 0.0.4, what prom-client serves on /metrics),
// read back into samples, so that `status` reads an install's metrics as Prometheus would.
// Comments (# HELP, # TYPE) and timestamps are dropped: status wants the values now.

/** Sample is one line of the exposition: a series and its value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** parseMetricsText reads every sample line; a line it cannot read is skipped, never fatal. */
export function parseMetricsText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const sample = parseLine(line);
    if (sample !== null) samples.push(sample);
  }
  return samples;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

function parseLine(line: string): Sample | null {
  const name = NAME.exec(line)?.[0];
  if (name === undefined) return null;
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith('{')) {
    const end = readLabels(rest, labels);
    if (end === -1) return null;
    rest = rest.slice(end);
  }
  const value = valueOf(rest.trim().split(/\s+/)[0] ?? '');
  return value === null ? null : { name, labels, value };
}

/** readLabels fills `labels` from `{a="x",b="y"}` and returns the index after the brace, or -1. */
function readLabels(text: string, labels: Record<string, string>): number {
  let i = 1;
  while (i < text.length) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (text[i] === '}') return i + 1;
    const key = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i))?.[0];
    if (key === undefined || text[i + key.length] !== '=' || text[i + key.length + 1] !== '"') return -1;
    i += key.length + 2;
    let value = '';
    for (; i < text.length && text[i] !== '"'; i++) {
      if (text[i] !== '\\') {
        value += text[i];
        continue;
      }
      i++;
      value += text[i] === 'n' ? '\n' : (text[i] ?? '');
    }
    if (i >= text.length) return -1;
    labels[key] = value;
    i++;
  }
  return -1;
}

function valueOf(word: string): number | null {
  if (word === '+Inf') return Infinity;
  if (word === '-Inf') return -Infinity;
  if (word === 'NaN') return NaN;
  const n = Number(word);
  return word !== '' && !Number.isNaN(n) ? n : null;
}
