// SweepTally counts what a sweep found and did, and turns it into the summary: a table for
// people, or one JSON object (docs/operations.md, "The sweep's report", documents its fields).

import Table from 'cli-table3';
import { REASONS, type Reason } from '../config/settings.ts';
import type { Decision, WaitReason } from '../decide/decide.ts';
import type { Outcome } from '../work/reconcile.ts';
import { otherInstanceLines, type OtherInstancePods } from './sweep-left-out.ts';

export interface ReasonCounts {
  /** Pods found eligible for this reason (the sum of the four columns after it). */
  found: number;
  /** Removed (in a dry run: would be removed). */
  removed: number;
  alreadyGone: number;
  /** Eligible but left alone: outside --reason, or over --max-removals. */
  skipped: number;
  failed: number;
}

/** KeptWhy is why a pod kept our finalizer without an error. */
export type KeptWhy = WaitReason | 'reason-filtered' | 'max-removals';

export interface SweepSummary {
  dryRun: boolean;
  interrupted: boolean;
  maxRemovals: number | null;
  maxRemovalsReached: boolean;
  podsListed: number;
  podsWithFinalizer: number;
  reasons: Record<Reason, ReasonCounts>;
  /** Pods that kept our finalizer, by why. */
  kept: Record<KeptWhy, number>;
  totals: ReasonCounts;
  /** Pods queued for removal that the run stopped before handling (interrupted, or the list failed): they keep our finalizer. */
  unfinished: number;
  apiRequests: number;
  conflictsRetried: number;
  wallSeconds: number;
  /** The first failures, with the API's message. */
  failures: Array<{ pod: string; reason: Reason | null; error: string }>;
  /** Workflow pods its selector left out for their instance ID, by ID; null when they could not be looked for. */
  otherInstances: OtherInstancePods[] | null;
}

const MAX_FAILURES_LISTED = 100;

const zero = (): ReasonCounts => ({ found: 0, removed: 0, alreadyGone: 0, skipped: 0, failed: 0 });

export class SweepTally {
  podsListed = 0;
  podsWithFinalizer = 0;
  conflicts = 0;
  readonly reasons = Object.fromEntries(REASONS.map((r) => [r, zero()])) as Record<Reason, ReasonCounts>;
  readonly kept: Record<KeptWhy, number> = { 'owner-alive-unrecorded': 0, 'owner-alive-offloaded': 0, unattributable: 0, 'reason-filtered': 0, 'max-removals': 0 };
  readonly failures: SweepSummary['failures'] = [];
  /** Failures that happened before any reason was known (e.g. the owner read failed). */
  unattributedFailures = 0;
  /** Pods whose work is not finished: queued, in flight, or waiting to be retried. */
  pending = 0;

  /** listed counts a listed pod and the decision its triage took from the cache. */
  listed(hasFinalizer: boolean, d: Decision): void {
    this.podsListed++;
    if (!hasFinalizer) return;
    this.podsWithFinalizer++;
    if (d.action === 'wait') this.kept[d.why]++;
    else if (d.action === 'remove' || d.action === 'verify') this.pending++;
  }

  /** finished counts the final outcome of one queued pod; `final` is false for a retry that will run again. */
  finished(pod: string, o: Outcome, final: boolean): void {
    this.conflicts += o.conflicts;
    if (!final) return;
    this.pending--;
    switch (o.kind) {
      case 'removed':
      case 'dry-run':
        this.#count(o.reason, 'removed');
        break;
      case 'already-gone':
        if (o.reason !== null) this.#count(o.reason, 'alreadyGone');
        break;
      case 'kept':
        this.kept[o.why]++;
        if (o.reason !== null) this.#count(o.reason, 'skipped');
        break;
      case 'retry':
      case 'failed':
        if (o.reason !== null) this.#count(o.reason, 'failed');
        else this.unattributedFailures++;
        if (this.failures.length < MAX_FAILURES_LISTED) this.failures.push({ pod, reason: o.reason, error: o.error });
        break;
    }
  }

  #count(reason: Reason, column: Exclude<keyof ReasonCounts, 'found'>): void {
    this.reasons[reason][column]++;
    this.reasons[reason].found++;
  }

  removedSoFar(): number {
    return REASONS.reduce((n, r) => n + this.reasons[r].removed, 0);
  }

  summary(o: { dryRun: boolean; interrupted: boolean; maxRemovals: number | null; apiRequests: number; wallSeconds: number; otherInstances: OtherInstancePods[] | null }): SweepSummary {
    const totals = zero();
    for (const r of REASONS) for (const k of Object.keys(totals) as Array<keyof ReasonCounts>) totals[k] += this.reasons[r][k];
    totals.failed += this.unattributedFailures;
    return {
      dryRun: o.dryRun,
      interrupted: o.interrupted,
      maxRemovals: o.maxRemovals,
      maxRemovalsReached: this.kept['max-removals'] > 0,
      podsListed: this.podsListed,
      podsWithFinalizer: this.podsWithFinalizer,
      reasons: this.reasons,
      kept: this.kept,
      totals,
      unfinished: this.pending,
      apiRequests: o.apiRequests,
      conflictsRetried: this.conflicts,
      wallSeconds: Math.round(o.wallSeconds * 1000) / 1000,
      failures: this.failures,
      otherInstances: o.otherInstances,
    };
  }
}

/** renderSummary is the human summary: a table per reason, then the totals and why pods were kept. */
export function renderSummary(s: SweepSummary, color: boolean): string {
  const removed = s.dryRun ? 'would remove' : 'removed';
  const table = new Table({
    head: ['reason', 'found', removed, 'already gone', 'skipped', 'failed'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right'],
    style: { head: color ? ['cyan'] : [], border: color ? ['grey'] : [] },
  });
  for (const r of REASONS) {
    const c = s.reasons[r];
    table.push([r, c.found, c.removed, c.alreadyGone, c.skipped, c.failed]);
  }
  const t = s.totals;
  table.push(['total', t.found, t.removed, t.alreadyGone, t.skipped, t.failed]);

  const lines = [table.toString()];
  const keptWhy = Object.entries(s.kept).filter(([, n]) => n > 0).map(([why, n]) => `${why} ${n}`);
  lines.push(`${pods(s.podsListed, 'pod', 'pods')} listed, ${s.podsWithFinalizer} with the finalizer; kept: ${keptWhy.length > 0 ? keptWhy.join(', ') : 'none'}`);
  lines.push(...otherInstanceLines(s.otherInstances));
  lines.push(`${s.wallSeconds.toFixed(1)} s, ${s.apiRequests} API requests, ${s.conflictsRetried} conflicts retried${s.dryRun ? ' (dry run: nothing was written)' : ''}`);
  if (s.maxRemovalsReached) lines.push(`stopped at --max-removals ${s.maxRemovals}: ${pods(s.kept['max-removals'], 'eligible pod was', 'eligible pods were')} left for a later run`);
  if (s.interrupted) lines.push('interrupted: the summary covers the work done before the signal');
  if (s.unfinished > 0) lines.push(`${pods(s.unfinished, 'queued pod was', 'queued pods were')} not handled: the run stopped before their turn`);
  for (const f of s.failures.slice(0, 10)) lines.push(`failed: ${f.pod} (${f.reason ?? 'undecided'}): ${f.error}`);
  if (t.failed > 10) lines.push(`… ${t.failed - 10} more failures (see the log, or --output json)`);
  return lines.join('\n') + '\n';
}

/** pods counts n in the singular or the plural. */
function pods(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
