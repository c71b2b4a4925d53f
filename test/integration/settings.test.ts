// Your settings, from your own files: each example of docs/operations.md's "Your settings" rendered
// as written (read from the doc, the repository's paths and Argo's fixture put in for the
// placeholders) with the tools a user runs (`kubectl kustomize`, `helm template`), and the
// settings the container would start with loaded through the CLI's own loader: each value lands.
// A settings key that is no setting stops the container as the CLI would. No API server: the
// patch route's example, a pair of kubectl commands, runs live in uninstall.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test, type TestContext } from 'node:test';
import { loadAll } from 'js-yaml';
import { findHelm } from '../../src/testbed/helm.ts';
import { containerSettings, podOwner, REPO, run, type KubeObject } from '../support/deploy.ts';
import { settingsExample } from '../support/doc-examples.ts';
import { CHART, HELM_VALUES, splitChart } from '../support/helm-chart.ts';

/** renderKustomization renders a documented kustomization from a folder of its own, the placeholders filled in. */
async function renderKustomization(t: TestContext, text: string): Promise<KubeObject[]> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-settings-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const filled = text
    .replaceAll('path/to/finalizer-sweeper/', `${relative(dir, REPO)}/`)
    .replace('https://github.com/argoproj/argo-workflows/manifests/namespace-install?ref=v4.1.2', relative(dir, join(REPO, 'test/fixtures/argo/namespace-install')));
  await writeFile(join(dir, 'kustomization.yaml'), filled);
  return loadAll((await run('kubectl', ['kustomize', dir])).stdout) as KubeObject[];
}

for (const [label, namespace, watched] of [['Standalone and namespaced', 'platform-sweeper', []], ['Sidecar on Argo\'s manifests', 'argo', ['argo']]] as const) {
  test(`${label}: the documented kustomization, rendered as written, gives the container the instance ID and the dry run, in a ConfigMap the uninstall's label finds`, async (t) => {
    const objects = await renderKustomization(t, await settingsExample(label, 'yaml'));
    const owner = podOwner(objects);

    const settings = await containerSettings(objects, owner);

    assert.equal(settings.instanceId, 'platform-east');
    assert.equal(settings.dryRun, true);
    assert.equal(settings.leaderElectionNamespace, namespace);
    assert.deepEqual(settings.namespaces, watched);
    const mine = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('finalizer-sweeper-settings-'));
    assert.equal(mine.length, 1);
    assert.equal(mine[0]?.metadata.labels?.['app.kubernetes.io/part-of'], 'finalizer-sweeper');
  });
}

test('Argo\'s Helm chart: the documented values, before ours as the README orders them, reach the config file over the chart\'s instance ID', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-settings-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'your-values.yaml'), await settingsExample('Argo\'s Helm chart', 'yaml'));
  const template = async (...flags: string[]) => splitChart((await run(await findHelm(), [
    'template', 'argo-workflows', join(REPO, CHART), '--namespace', 'argo', '-f', join(dir, 'your-values.yaml'), '-f', join(REPO, HELM_VALUES), '--set', 'crds.install=false', ...flags,
  ])).stdout);

  const plain = await template();
  const withChartId = await template('--set', 'controller.instanceID.enabled=true', '--set', 'controller.instanceID.useReleaseName=true');
  const withSet = await template('--set', 'finalizerSweeper.settings.dryRun=false');

  for (const chart of [plain, withChartId]) {
    const settings = await containerSettings(chart.ours.objects, chart.controller);
    assert.equal(settings.instanceId, 'platform-east');
    assert.equal(settings.dryRun, true);
  }
  assert.equal((await containerSettings(withSet.ours.objects, withSet.controller)).dryRun, false, '--set wins over your values file');
});

test('a settings key that is no setting stops the container at start, with the variable meant', async (t) => {
  const example = await settingsExample('Standalone and namespaced', 'yaml');
  const objects = await renderKustomization(t, example.replace('DRY_RUN=true', 'DRYRUN=true'));

  await assert.rejects(containerSettings(objects, podOwner(objects)), /Unknown environment variable: FINALIZER_SWEEPER_DRYRUN\nFINALIZER_SWEEPER_DRYRUN: did you mean FINALIZER_SWEEPER_DRY_RUN\?/);
});
