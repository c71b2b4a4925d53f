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
