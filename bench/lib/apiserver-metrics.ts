// The API server's own /metrics, read as the admin: what the server counted, whoever sent it
// (PodGC's DELETEs among them, which no client of ours can count).
import { request } from 'node:https';
import type { ControlPlane } from '../../src/testbed/control-plane.ts';
import { Scrape } from './prom.ts';

/** scrapeApiServer reads kube-apiserver's /metrics; it fails after timeoutMs. */
export function scrapeApiServer(plane: ControlPlane, timeoutMs = 30_000): Promise<Scrape> {
  const url = new URL('/metrics', plane.server);
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { Authorization: `Bearer ${plane.token}` }, ca: Buffer.from(plane.caData, 'base64').toString('utf8'), timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => (res.statusCode === 200 ? resolve(new Scrape(Buffer.concat(chunks).toString('utf8'))) : reject(new Error(`kube-apiserver /metrics: HTTP ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`kube-apiserver /metrics: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** podDeletes is the server's count of pod DELETE requests (apiserver_request_total), every answer code. */
export function podDeletes(s: Scrape): number {
  return s.sum('apiserver_request_total', { verb: 'DELETE', resource: 'pods' });
}

/** ServerLoad is what the server says of its own load over a window: where it, not a client, is the limit. */
export interface ServerLoad {
  /** rejected: requests APF refused (429) over the window, every priority level. */
  rejected: number;
  /** patchMean, patchP99: the server's time to serve a pod PATCH, in seconds (p99: its bucket's upper bound). */
  patchMean: number | null;
  patchP99: number | null;
  /** queueWaitMean, queueWaitP99: time requests waited in APF's queues before they ran, in seconds. */
  queueWaitMean: number | null;
  queueWaitP99: number | null;
}

/** serverLoad compares two scrapes of kube-apiserver's /metrics, the window's start and end. */
export function serverLoad(before: Scrape, after: Scrape): ServerLoad {
  const patch = { verb: 'PATCH', resource: 'pods' };
  const rejected = 'apiserver_flowcontrol_rejected_requests_total';
  const latency = 'apiserver_request_duration_seconds';
  const wait = 'apiserver_flowcontrol_request_wait_duration_seconds';
  return {
    rejected: after.sum(rejected) - before.sum(rejected),
    patchMean: histogramMean(before, after, latency, patch),
    patchP99: histogramQuantile(before, after, latency, patch, 0.99),
    queueWaitMean: histogramMean(before, after, wait),
    queueWaitP99: histogramQuantile(before, after, wait, {}, 0.99),
  };
}

/**
 * seatsInUse: the seats APF counts as executing now, over every priority level, and the seats its
 * levels are nominally given (apiserver_flowcontrol_current_executing_seats, _nominal_limit_seats).
 */
export function seatsInUse(s: Scrape): { executing: number; nominal: number } {
  return { executing: s.sum('apiserver_flowcontrol_current_executing_seats'), nominal: s.sum('apiserver_flowcontrol_nominal_limit_seats') };
}

/** histogramMean: the mean of what a histogram observed between two scrapes; null if it observed nothing. */
export function histogramMean(before: Scrape, after: Scrape, name: string, match: Record<string, string> = {}): number | null {
  const count = after.sum(`${name}_count`, match) - before.sum(`${name}_count`, match);
  return count > 0 ? (after.sum(`${name}_sum`, match) - before.sum(`${name}_sum`, match)) / count : null;
}

/**
 * histogramQuantile: the upper bound of the bucket that holds quantile q of what a histogram
 * observed between two scrapes, over every series that matches; null if it observed nothing,
 * Infinity if q falls beyond the last finite bucket.
 */
export function histogramQuantile(before: Scrape, after: Scrape, name: string, match: Record<string, string>, q: number): number | null {
  const byBound = new Map<number, number>();
  const add = (s: Scrape, sign: number) => {
    for (const sample of s.samples) {
      if (sample.name !== `${name}_bucket` || !Object.entries(match).every(([k, v]) => sample.labels[k] === v)) continue;
      const le = sample.labels['le'] === '+Inf' ? Infinity : Number(sample.labels['le']);
      byBound.set(le, (byBound.get(le) ?? 0) + sign * sample.value);
    }
  };
  add(after, 1);
  add(before, -1);
  const bounds = [...byBound.keys()].sort((a, b) => a - b);
  const total = byBound.get(Infinity) ?? 0;
  if (total <= 0) return null;
  // Buckets are cumulative: the first bound whose count reaches q of the total holds the quantile.
  return bounds.find((le) => (byBound.get(le) ?? 0) >= q * total) ?? Infinity;
}
