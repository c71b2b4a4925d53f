// RequestTally counts a client's requests by what they do to the API, from method and path alone:
// Argo's workflow-controller exposes no request counter on the bed (its metrics server would
// listen on every interface, so it is disabled), so its requests are counted by a loopback proxy
// in front of it (src/testbed/fault-proxy.ts) that hands each one here.

/** RequestKind: a pod write (create, patch, update, delete: the finalizer's removal is a patch), or anything else. */
export type RequestKind = 'pod write' | 'other write' | 'read';

/** requestKind classifies one request; a watch or list is a read, a binding or eviction a pod write. */
export function requestKind(method: string, url: string): RequestKind {
  const m = method.toUpperCase();
  if (m === 'GET' || m === 'HEAD' || m === 'OPTIONS') return 'read';
  const path = new URL(url, 'http://x').pathname;
  return /^\/api\/v1\/namespaces\/[^/]+\/pods(\/|$)/.test(path) ? 'pod write' : 'other write';
}

export class RequestTally {
  readonly counts: Record<RequestKind, number> = { 'pod write': 0, 'other write': 0, read: 0 };

  add(method: string, url: string): void {
    this.counts[requestKind(method, url)]++;
  }

  get total(): number {
    return this.counts['pod write'] + this.counts['other write'] + this.counts.read;
  }

  /** since returns the counts added after `before` (a copy of counts taken earlier), and their total. */
  since(before: Readonly<Record<RequestKind, number>>): Record<RequestKind | 'total', number> {
    const d = {
      'pod write': this.counts['pod write'] - before['pod write'],
      'other write': this.counts['other write'] - before['other write'],
      read: this.counts.read - before.read,
    };
    return { ...d, total: d['pod write'] + d['other write'] + d.read };
  }
}
