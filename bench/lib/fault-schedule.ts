// The soak scenario's faults, spread over the run so that each has time to be recovered from
// before the next: the leader killed, the API server restarted, a blackout of the API for the
// controllers, an outage of the owner resource.

export type FaultKind = 'kill-leader' | 'restart-api-server' | 'blackout' | 'owner-outage';

export interface Fault {
  kind: FaultKind;
  /** atMs: when it starts, from the start of the run. */
  atMs: number;
  /** forMs: how long it lasts (0: an event, not a spell). */
  forMs: number;
}

/** SPELL_MS is how long a blackout and an owner outage last at full length: 30 s. */
const SPELL_MS = 30_000;

/**
 * faultSchedule places the four faults at 20, 40, 60 and 80% of a run of durationMs; the two
 * spells last 30 s, or a tenth of the run if that is shorter, so that a shortened run still
 * spends most of its time healthy.
 */
export function faultSchedule(durationMs: number): Fault[] {
  const spell = Math.min(SPELL_MS, Math.round(durationMs / 10));
  const at = (f: number) => Math.round(durationMs * f);
  return [
    { kind: 'kill-leader', atMs: at(0.2), forMs: 0 },
    { kind: 'restart-api-server', atMs: at(0.4), forMs: 0 },
    { kind: 'blackout', atMs: at(0.6), forMs: spell },
    { kind: 'owner-outage', atMs: at(0.8), forMs: spell },
  ];
}

/** SoakPlan is how long the soak runs at scale 1 and whether it injects faults. */
export interface SoakPlan {
  fullMs: number;
  faults: boolean;
}

/**
 * soakPlan reads the soak's two knobs from the environment: BENCH_SOAK_MINUTES (default 30) and
 * BENCH_SOAK_FAULTS=none. A long run without faults keeps each replica in one role for most of it,
 * which is what a memory slope of a few MB an hour needs to be told from noise.
 */
export function soakPlan(env: NodeJS.ProcessEnv): SoakPlan {
  const minutes = env['BENCH_SOAK_MINUTES'] ?? '30';
  if (!/^\d+(\.\d+)?$/.test(minutes) || !(Number(minutes) > 0)) throw new Error(`BENCH_SOAK_MINUTES must be a positive number of minutes, got "${minutes}"`);
  const faults = env['BENCH_SOAK_FAULTS'] ?? 'all';
  if (faults !== 'all' && faults !== 'none') throw new Error(`BENCH_SOAK_FAULTS must be "all" or "none", got "${faults}"`);
  return { fullMs: Number(minutes) * 60_000, faults: faults === 'all' };
}
