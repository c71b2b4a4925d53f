// What a scenario is: a numbered, named function that fills in its part of the report as it
// goes, so that a failure half-way still leaves what was measured before it.
import type { ControlPlaneOptions } from '../../src/testbed/control-plane.ts';
import type { BenchEnv, Identity } from '../lib/env.ts';
import type { Goal, Row, Series } from '../lib/result.ts';

/** LocalContext is what a scenario that needs no control plane gets. */
export interface LocalContext {
  scale: number;
  log(message: string): void;
  /** kubeVersions, identities: what --kube-version and --as asked for, if given (a scenario that starts its own control planes runs each). */
  kubeVersions?: readonly string[];
  identities?: readonly Identity[];
}

/** RealArgoContext: how many Workflows (of 5 pods) each real-Argo run creates (bench/scenarios/real-argo.ts). */
export interface RealArgoContext extends LocalContext {
  workflows: number;
}

export interface ScenarioContext extends LocalContext {
  env: BenchEnv;
}

/** Outcome is the part of the result a scenario fills in. */
export interface Outcome {
  size: Record<string, number>;
  rows: Row[];
  goals: Goal[];
  notes: string[];
  /** series: raw samples behind the figures, kept in the JSON (not the tables) for later reading. */
  series?: Series[];
}

interface Named {
  id: number;
  key: string;
  title: string;
}

/** ClusterScenario runs against a control plane of its own. */
export interface ClusterScenario extends Named {
  /** plane: options of the scenario's control plane (e.g. API server flags); default none. */
  plane?: ControlPlaneOptions;
  run(ctx: ScenarioContext, out: Outcome): Promise<void>;
  /**
   * realArgo: the scenario's runs with Argo's own workflow-controller, on the real-Argo bed, which
   * starts a control plane of its own: run after `run`'s plane is stopped, so that only one runs
   * at a time on the machine.
   */
  realArgo?(ctx: RealArgoContext, out: Outcome): Promise<void>;
}

/** LocalScenario measures something in this process alone: no control plane is started for it. */
export interface LocalScenario extends Named {
  local: true;
  run(ctx: LocalContext, out: Outcome): Promise<void>;
}

export type Scenario = ClusterScenario | LocalScenario;

/** scaled is n times the scale, rounded, and at least `min`. */
export function scaled(n: number, scale: number, min = 1): number {
  return Math.max(min, Math.round(n * scale));
}

/** seconds turns a performance.now() interval into seconds. */
export function seconds(fromMs: number, toMs: number): number {
  return (toMs - fromMs) / 1000;
}
