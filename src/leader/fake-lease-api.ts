// FakeLeaseApi is an in-memory API server for one Lease, with the API server's optimistic
// concurrency: a PUT carrying a stale resourceVersion gets 409. For the elector's unit tests.

import { ApiError } from '../kube/errors.ts';
import type { Lease, LeaseApi, LeaseSpec } from './lease.ts';

type Options = Parameters<LeaseApi['request']>[0];

export class FakeLeaseApi implements LeaseApi {
  lease: Lease | null = null;
  /** failing makes every request fail with 500 while true. */
  failing = false;
  /** failNext makes that many next requests fail with 500. */
  failNext = 0;
  /**
   * loseNextAnswer makes that many next writes land on the server but lose their answer (the
   * caller sees a reset connection), as when a client aborts a request already sent.
   */
  loseNextAnswer = 0;
  /** requests records every request, in order. */
  readonly requests: Options[] = [];
  #rv = 0;

  async request<T>(o: Options): Promise<T> {
    this.requests.push(o);
    await new Promise((r) => setImmediate(r));
    o.signal?.throwIfAborted();
    if (this.failing || this.failNext > 0) {
      this.failNext = Math.max(0, this.failNext - 1);
      throw new ApiError(500, 'InternalError', 'injected failure');
    }
    const body = o.body as Lease | undefined;
    switch (o.method) {
      case 'GET':
        if (this.lease === null) throw new ApiError(404, 'NotFound', 'leases not found');
        return structuredClone(this.lease) as T;
      case 'POST':
        if (this.lease !== null) throw new ApiError(409, 'AlreadyExists', 'leases already exists');
        return this.#store(body!) as T;
      case 'PUT':
        if (this.lease === null) throw new ApiError(404, 'NotFound', 'leases not found');
        if (body!.metadata.resourceVersion !== this.lease.metadata.resourceVersion) {
          throw new ApiError(409, 'Conflict', 'the object has been modified');
        }
        return this.#answer(this.#store(body!)) as T;
      default:
        throw new ApiError(405, 'MethodNotAllowed', `${o.method} is not used on leases`);
    }
  }

  /** write changes the Lease as another party would (a new resourceVersion). */
  write(spec: LeaseSpec, labels?: Record<string, string>): void {
    const base: Lease = this.lease ?? { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l', namespace: 'ns' } };
    this.#store({ ...base, metadata: { ...base.metadata, ...(labels ? { labels } : {}) }, spec: { ...base.spec, ...spec } });
  }

  /** holder is the Lease's holderIdentity now. */
  holder(): string | null | undefined {
    return this.lease?.spec?.holderIdentity;
  }

  #answer(lease: Lease): Lease {
    if (this.loseNextAnswer === 0) return lease;
    this.loseNextAnswer -= 1;
    throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
  }

  #store(lease: Lease): Lease {
    this.#rv += 1;
    this.lease = structuredClone({ ...lease, metadata: { ...lease.metadata, resourceVersion: String(this.#rv) } });
    return structuredClone(this.lease);
  }
}
