// npm run bench [-- --scenario N|name[,…]] [--scale F] [--kube-version V] [--as admin]: runs the
// benchmark scenarios, each on a fresh local control plane, prints the results as Markdown tables
// and writes them as JSON under bench/results/. See BENCHMARKS.md for what is measured and how.
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { compiledCli } from './lib/build.ts';
import { IDENTITIES, startEnv, machineOf, type Identity } from './lib/env.ts';
import { KUBE_VERSION_ENV, KUBE_VERSIONS, kubeVersion } from '../src/testbed/binaries.ts';
import type { RunResult, ScenarioResult } from './lib/result.ts';
import { renderRun, renderScenario, writeResults } from './report.ts';
import { scaled, type Outcome, type Scenario } from './scenarios/scenario.ts';
import { massOrphaning } from './scenarios/mass-orphaning.ts';
import { orphansFirst } from './scenarios/orphans-first.ts';
import { churn } from './scenarios/churn.ts';
import { conflicts } from './scenarios/conflicts.ts';
import { memoryBandwidth } from './scenarios/memory-bandwidth.ts';
import { startup } from './scenarios/startup.ts';
import { sweep } from './scenarios/sweep.ts';
import { goodNeighbour } from './scenarios/good-neighbour.ts';
import { atScale } from './scenarios/scale.ts';
import { budgetOverhead } from './scenarios/budget.ts';
import { soak } from './scenarios/soak.ts';
import { argoLagging } from './scenarios/argo-lagging.ts';
import { decodeStall } from './scenarios/decode.ts';
import { guardrail } from './scenarios/guardrail.ts';
import { queueFairness } from './scenarios/queue-fairness.ts';
import { backlog } from './scenarios/backlog.ts';
import { defaultsSweep } from './scenarios/defaults-sweep.ts';
import { failover } from './scenarios/failover.ts';

const SCENARIOS: Scenario[] = [massOrphaning, orphansFirst, churn, conflicts, memoryBandwidth, startup, sweep, goodNeighbour, atScale, budgetOverhead, soak, argoLagging, guardrail, decodeStall, queueFairness, backlog, failover, defaultsSweep];

/** Real Argo's runs: 200 Workflows of 5 pods take a few minutes each on 2 shared cores (../shared/REAL-ARGO.md). */
const REAL_ARGO_WORKFLOWS = 200;

const USAGE = `usage: npm run bench [-- --scenario N|name[,N|name…]] [--scale F] [--real-argo-workflows N] [--kube-version V[,V…]] [--as service-account|admin[,…]]
  --scenario             run only these scenarios (numbers or names: ${SCENARIOS.map((s) => `${s.id} ${s.key}`).join(', ')})
  --scale                multiply every scenario's object counts by F (e.g. 0.1 for a quick run); default 1
  --real-argo-workflows  Workflows (of 5 pods) in each run with real Argo (scenarios ${SCENARIOS.filter((s) => 'realArgo' in s).map((s) => s.id).join(' and ')}); 0 skips those runs; default ${REAL_ARGO_WORKFLOWS} times the scale
  --kube-version         the Kubernetes release(s) of the control planes (${KUBE_VERSIONS.join(', ')}, or a minor: 1.31); each scenario runs on each; default ${KUBE_VERSION_ENV}, else the newest (scenario ${defaultsSweep.id}: all three)
  --as                   who scenarios 1, ${failover.id} and ${defaultsSweep.id}'s contenders run as: a service account under API Priority and Fairness, or the admin, whom it exempts; each scenario runs as each; default service-account (scenario ${defaultsSweep.id}: both)`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { scenario: { type: 'string', multiple: true }, scale: { type: 'string', default: '1' }, 'real-argo-workflows': { type: 'string' }, 'kube-version': { type: 'string', multiple: true }, as: { type: 'string', multiple: true }, help: { type: 'boolean', default: false } },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const scale = Number(values.scale);
  if (!(scale > 0 && scale <= 1)) return usage(`--scale must be a number in (0, 1], got "${values.scale}"`);
  const given = values['real-argo-workflows'];
  const realArgoWorkflows = given === undefined ? scaled(REAL_ARGO_WORKFLOWS, scale, 2) : Number(given);
  if (!Number.isInteger(realArgoWorkflows) || realArgoWorkflows < 0) return usage(`--real-argo-workflows must be a whole number, 0 or more, got "${given}"`);
  let kubeVersions: string[] | undefined;
  try {
    kubeVersions = listOf(values['kube-version'])?.map((v) => kubeVersion({ [KUBE_VERSION_ENV]: v }));
  } catch (err) {
    return usage(err instanceof Error ? err.message : String(err));
  }
  const identities = listOf(values.as);
  const unknown = identities?.find((i) => !IDENTITIES.includes(i as Identity));
  if (unknown !== undefined) return usage(`--as must be one of ${IDENTITIES.join(', ')}, got "${unknown}"`);
  const choice = { kubeVersions, identities: identities as Identity[] | undefined };
  const wanted = (values.scenario ?? []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  const chosen = wanted.length === 0 ? SCENARIOS : wanted.map((w) => SCENARIOS.find((s) => String(s.id) === w || s.key === w));
  if (chosen.some((s) => s === undefined)) return usage(`unknown scenario in "${wanted.join(',')}"`);

  // Built before the first control plane starts, so that no scenario's figures include the build.
  compiledCli((m) => console.error(`bench: ${m}`));
  const started = performance.now();
  const results: ScenarioResult[] = [];
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  const run: RunResult = {
    date: new Date().toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    scale,
    machine: machineOf('unknown'),
    seconds: 0,
    scenarios: results,
  };
  let path = '';
  for (const scenario of chosen as Scenario[]) {
    // A scenario on a control plane of its own runs once per release and identity asked for.
    const variants = 'local' in scenario ? [{}] : (choice.kubeVersions ?? [undefined]).flatMap((kube) => (choice.identities ?? [undefined]).map((as) => ({ kube, as })));
    for (const variant of variants) {
      const result = await runScenario(scenario, scale, realArgoWorkflows, { ...choice, ...variant }, (v) => (run.machine = machineOf(v)));
      results.push(result);
      console.log(`\n${renderScenario(result)}\n`);
      // Written after every scenario, so that a run cut short keeps what it measured.
      run.seconds = (performance.now() - started) / 1000;
      path = await writeResults(run, dir, false);
    }
  }
  if (scale === 1 && chosen.length === SCENARIOS.length && kubeVersions === undefined && identities === undefined) path = await writeResults(run, dir, true);
  console.log(`\n${renderRun(run)}\n\nJSON: ${path}`);
  return results.some((r) => r.error !== undefined) ? 1 : 0;
}

/** Choice is what --kube-version and --as asked for; kube and as, the one a cluster scenario's run takes. */
interface Choice {
  kubeVersions: string[] | undefined;
  identities: Identity[] | undefined;
  kube?: string | undefined;
  as?: Identity | undefined;
}

async function runScenario(scenario: Scenario, scale: number, realArgoWorkflows: number, choice: Choice, onVersion: (v: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const loadAtStart = loadavg()[0] ?? 0;
  const out: Outcome = { size: {}, rows: [], goals: [], notes: [] };
  const log = (message: string): void => console.error(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${scenario.id} ${scenario.key}: ${message}`);
  let error: string | undefined;
  try {
    if ('local' in scenario) {
      await scenario.run({ scale, log, kubeVersions: choice.kubeVersions, identities: choice.identities }, out);
    } else {
      log('starting a control plane');
      const env = await startEnv({ ...scenario.plane, kubeVersion: choice.kube }, choice.as);
      onVersion(env.plane.serverVersion);
      try {
        await scenario.run({ env, scale, log }, out);
      } finally {
        await env.stop();
      }
      if (scenario.realArgo && realArgoWorkflows > 0) await scenario.realArgo({ scale, log, workflows: realArgoWorkflows }, out);
    }
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
    log(`failed: ${error}`);
  }
  const result: ScenarioResult = {
    id: scenario.id,
    key: scenario.key,
    title: `${scenario.title}${choice.kube === undefined && choice.as === undefined ? '' : ` [${[choice.kube, choice.as === undefined ? undefined : `as ${choice.as}`].filter((x) => x !== undefined).join(', ')}]`}`,
    ...out,
    seconds: (performance.now() - started) / 1000,
    loadAverage: { start: loadAtStart, end: loadavg()[0] ?? 0 },
  };
  if (error !== undefined) result.error = error;
  return result;
}

/** listOf splits repeated and comma-separated values; undefined when none was given. */
function listOf(given: string[] | undefined): string[] | undefined {
  const list = (given ?? []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  return list.length === 0 ? undefined : list;
}

function usage(problem: string): number {
  console.error(`bench: ${problem}\n${USAGE}`);
  return 2;
}

process.exitCode = await main();
