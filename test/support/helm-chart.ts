// Argo's community chart (test/fixtures/argo-helm, argo-helm 1.0.18) with deploy/helm's values,
// rendered and installed with a real helm (src/testbed/helm.ts), as a user's `helm upgrade` does.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { findHelm } from '../../src/testbed/helm.ts';
import { deployPlane, kubectl, REPO, run, type Container, type Deployment, type KubeObject, type Rendered } from './deploy.ts';

export const CHART = 'test/fixtures/argo-helm/argo-workflows';
export const HELM_VALUES = 'deploy/helm/argo-workflows-values.yaml';
/** PART_OF is the label every object of ours carries, on every route. */
export const PART_OF = 'app.kubernetes.io/part-of';

/** Release is a release of the chart and the chart values the fragment reads. */
export interface Release {
  name: string;
  namespace: string;
  singleNamespace?: boolean;
  namespaceOverride?: string;
  instanceID?: { enabled: boolean; useReleaseName?: boolean; explicitID?: string };
}

export interface HelmValues {
  controller: { podAnnotations: Record<string, string>; extraContainers: Container[]; volumes: NonNullable<Deployment['spec']['template']['spec']['volumes']> };
  extraObjects: unknown[];
}

/** Chart is one rendering: our objects (the fragment's extraObjects), Argo's controller Deployment, and everything. */
export interface Chart {
  ours: Rendered;
  controller: Deployment;
  all: KubeObject[];
}

export async function helmValues(): Promise<HelmValues> {
  return loadAll(await readFile(join(REPO, HELM_VALUES), 'utf8'))[0] as HelmValues;
}

/** releaseFlags are the chart values a Release sets, and crds.install=false: the fixture leaves the CRD files out. */
export function releaseFlags(r: Release): string[] {
  const flags = ['--set', 'crds.install=false'];
  if (r.singleNamespace === true) flags.push('--set', 'singleNamespace=true');
  if (r.namespaceOverride !== undefined) flags.push('--set', `namespaceOverride=${r.namespaceOverride}`);
  if (r.instanceID !== undefined) {
    flags.push('--set', `controller.instanceID.enabled=${r.instanceID.enabled}`);
    if (r.instanceID.useReleaseName !== undefined) flags.push('--set', `controller.instanceID.useReleaseName=${r.instanceID.useReleaseName}`);
    if (r.instanceID.explicitID !== undefined) flags.push('--set-string', `controller.instanceID.explicitID=${r.instanceID.explicitID}`);
  }
  return flags;
}

/** helm runs the real helm against the deploy plane, from the repository root. */
export async function helm(args: string[]): Promise<{ stdout: string }> {
  return run(await findHelm(), [...args, '--kubeconfig', deployPlane().kubeconfigPath]);
}

/** renderChart is `helm template` of the chart with our values (and any extra flags), split into ours and Argo's. */
export async function renderChart(r: Release, extra: string[] = []): Promise<Chart> {
  const { stdout } = await run(await findHelm(), [
    'template', r.name, join(REPO, CHART), '--namespace', r.namespace,
    '-f', join(REPO, HELM_VALUES), ...releaseFlags(r), ...extra,
  ]);
  return splitChart(stdout);
}

/** splitChart splits a chart's manifest into our objects and Argo's controller Deployment. */
export function splitChart(manifest: string): Chart {
  const all = (loadAll(manifest) as (KubeObject | null)[]).filter((o): o is KubeObject => o !== null);
  const objects = all.filter((o) => o.metadata.labels?.[PART_OF] === 'finalizer-sweeper');
  const controllers = all.filter((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'workflow-controller');
  assert.equal(controllers.length, 1, 'the chart renders one workflow-controller Deployment');
  return { ours: { objects, yaml: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }) }, controller: controllers[0] as Deployment, all };
}

/** readmeHelmCommand is the README's `helm upgrade --install`, as helmCommandArgs gives it. */
export async function readmeHelmCommand(): Promise<string[]> {
  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  const block = /### With Argo's Helm chart\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, 'the README\'s Helm block');
  assert.doesNotMatch(block, /\bsed\b/, 'no edit of a file that a second upgrade would find already changed');
  const command = /^helm upgrade --install (?:.*\\\n)*.*$/m.exec(block)?.[0];
  assert.ok(command, 'the README gives helm upgrade --install');
  return helmCommandArgs(command);
}

/**
 * helmCommandArgs is a documented helm command as an argument list, run from the repository root:
 * the chart from the fixture instead of the argo repository, no values file of the user's own,
 * the user's registry filled in.
 */
export function helmCommandArgs(command: string): string[] {
  const words = command.replace(/\\\n/g, ' ').match(/'[^']*'|\S+/g) ?? [];
  assert.equal(words[0], 'helm', command);
  const args = words.slice(1).map((w) => w.replace(/^'|'$/g, '').replace('REGISTRY', 'registry.test/platform'));
  const yours = args.indexOf('your-values.yaml');
  assert.equal(args[yours - 1], '-f', `${command}: -f your-values.yaml`);
  args.splice(yours - 1, 2);
  return args.map((a) => (a === 'argo/argo-workflows' ? join(REPO, CHART) : a.startsWith('deploy/') ? join(REPO, a) : a));
}

/** liveController is Argo's controller Deployment of the chart, as the API server holds it. */
export async function liveController(namespace: string): Promise<Deployment> {
  const { stdout } = await kubectl(['-n', namespace, 'get', 'deployment', '-l', 'app.kubernetes.io/component=workflow-controller', '-o', 'json']);
  const [live] = (JSON.parse(stdout) as { items: Deployment[] }).items;
  assert.ok(live, 'Argo\'s controller Deployment');
  return live;
}

