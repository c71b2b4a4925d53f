// The shapes of the benchmark's results: what each scenario reports, and a whole run.
import type { Machine } from './env.ts';

/** Figure is one measured number; null means "not measured" (and says why in the row's note). */
export interface Figure {
  name: string;
  value: number | null;
  unit: string;
}

/** Row is one contender's figures in one scenario. */
export interface Row {
  contender: string;
  figures: Figure[];
  note?: string;
}

/** Goal is one of the issue's goals: met, not met, or not measured (null). */
export interface Goal {
  goal: string;
  measured: string;
  /** undecided: measured, but too noisy to tell either way (see the soak's memory goals). */
  met: boolean | 'undecided' | null;
}

/** Series is one sampled quantity of one contender over a run: [seconds into the run, value, tag]. */
export interface Series {
  contender: string;
  name: string;
  unit: string;
  /** tag: what the contender was doing at that sample (the soak: 1 leading, 0 following). */
  samples: Array<[number, number, number]>;
}

export interface ScenarioResult {
  id: number;
  key: string;
  title: string;
  /** size: the scenario's object counts as run (after --scale). */
  size: Record<string, number>;
  rows: Row[];
  goals: Goal[];
  notes: string[];
  series?: Series[];
  seconds: number;
  /** loadAverage: the machine's 1-minute load average as the scenario began and ended (2 cores). */
  loadAverage: { start: number; end: number };
  /** error: the scenario failed; its rows hold what was measured before. */
  error?: string;
}

export interface RunResult {
  date: string;
  command: string;
  scale: number;
  machine: Machine;
  seconds: number;
  scenarios: ScenarioResult[];
}

/** fig builds a Figure. */
export function fig(name: string, value: number | null, unit = ''): Figure {
  return { name, value: value === null || Number.isFinite(value) ? value : null, unit };
}

/** goal builds a Goal from a measured value and a test; an unknown value is "not measured". */
export function goal(text: string, value: number | null, unit: string, test: (v: number) => boolean): Goal {
  if (value === null) return { goal: text, measured: 'not measured', met: null };
  return { goal: text, measured: `${format(value)}${unit.trim() ? ` ${unit.trim()}` : ''}`, met: test(value) };
}

/** format prints a number with a precision that suits its size. */
export function format(v: number | null): string {
  if (v === null) return 'not measured';
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  if (a === 0) return '0';
  return v.toPrecision(2);
}
