// The coordination.k8s.io/v1 Lease as leader election uses it, and the three calls it needs.
// Every call goes at budget priority 0: a renewal starved by bulk work costs the leadership.

import type { ApiClient } from '../kube/client.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';

/** LeaseSpec is the Lease's spec (coordination.k8s.io/v1). */
export interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  /** acquireTime and renewTime are MicroTime: RFC 3339 with exactly six fractional digits. */
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
}

export interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string; [k: string]: unknown };
  spec?: LeaseSpec;
}

/**
 * LeaseApi is the part of ApiClient that leader election uses. A candidate given `watch` hears of
 * a release at once (release-watch.ts); without it, at its next retry.
 */
export type LeaseApi = Pick<ApiClient, 'request'> & Partial<Pick<ApiClient, 'watch'>>;
export type WatchableLeaseApi = Pick<ApiClient, 'request' | 'watch'>;

/** LEASE_PRIORITY is the budget priority of every lease call: the most urgent lane. */
export const LEASE_PRIORITY = 0;

/** microTime formats a Date as MicroTime; the API server refuses fewer than six digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/Z$/, '000Z');
}

/** LeaseRef addresses one Lease. */
export interface LeaseRef {
  namespace: string;
  name: string;
}

function leasePath(ref: LeaseRef, named: boolean): string {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(ref.namespace)}/leases`;
  return named ? `${base}/${encodeURIComponent(ref.name)}` : base;
}

/** getLease reads the Lease, or null when it does not exist. */
export async function getLease(api: LeaseApi, ref: LeaseRef, signal?: AbortSignal): Promise<Lease | null> {
  try {
    return await api.request<Lease>({ method: 'GET', path: leasePath(ref, true), signal, priority: LEASE_PRIORITY, verb: 'get' });
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

/** createLease creates it with `spec`; null when someone else created it first (409). */
export async function createLease(api: LeaseApi, ref: LeaseRef, spec: LeaseSpec, signal?: AbortSignal): Promise<Lease | null> {
  const body: Lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: ref.name, namespace: ref.namespace }, spec };
  try {
    return await api.request<Lease>({ method: 'POST', path: leasePath(ref, false), body, signal, priority: LEASE_PRIORITY, verb: 'create' });
  } catch (e) {
    if (isConflict(e)) return null;
    throw e;
  }
}

/**
 * updateLease replaces the spec of `from`, carrying from's resourceVersion: null when the Lease
 * changed since it was read (409), i.e. someone else wrote it first.
 */
export async function updateLease(api: LeaseApi, from: Lease, spec: LeaseSpec, signal?: AbortSignal): Promise<Lease | null> {
  const body: Lease = { ...from, spec };
  try {
    return await api.request<Lease>({ method: 'PUT', path: leasePath(from.metadata, true), body, signal, priority: LEASE_PRIORITY, verb: 'update' });
  } catch (e) {
    if (isConflict(e)) return null;
    throw e;
  }
}
