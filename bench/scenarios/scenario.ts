// What a scenario is: a numbered, named function that fills in its part of the report as it
// goes, so that a failure half-way still leaves what was measured before it.
import type { ControlPlaneOptions } from '../../src/testbed/control-plane.ts';
import type { BenchEnv } from '../lib/env.ts';
import type { Goal, Row } from '../lib/result.ts';

export interface ScenarioContext {
  env: BenchEnv;
  scale: number;
  log(message: string): void;
}

/** Outcome is the part of the result a scenario fills in. */
export interface Outcome {
  size: Record<string, number>;
  rows: Row[];
  goals: Goal[];
  notes: string[];
}

export interface Scenario {
  id: number;
  key: string;
  title: string;
  /** plane: options of the scenario's control plane (e.g. API server flags); default none. */
  plane?: ControlPlaneOptions;
  run(ctx: ScenarioContext, out: Outcome): Promise<void>;
}

/** scaled is n times the scale, rounded, and at least `min`. */
export function scaled(n: number, scale: number, min = 1): number {
  return Math.max(min, Math.round(n * scale));
}

/** seconds turns a performance.now() interval into seconds. */
export function seconds(fromMs: number, toMs: number): number {
  return (toMs - fromMs) / 1000;
}
