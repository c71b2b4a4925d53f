// A config file changed under a running controller, as the kubelet changes a mounted ConfigMap
// (the new text swapped in whole): a text it cannot start with leaves it running on its settings,
// said once and reported in /metrics; the next valid text stops it cleanly (exit 0) for the
// container to restart with it.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { useTestCluster } from '../support/cluster.ts';
import { logLines, startCli } from '../support/cli.ts';
import { metricsPortOf, sample, scrape } from '../support/scrape.ts';
import { CONFIG_POLL_MS } from '../../src/commands/config-watch.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const INVALID = 'the changed config file is invalid: keeping the running settings, not restarting';

/** running starts the controller as the CLI on a config file of its own, and waits until it serves its metrics. */
async function running(t: TestContext) {
  const ns = await newNamespace(t);
  const dir = await mkdtemp(join(tmpdir(), 'config-reload-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const config = join(dir, 'finalizer-sweeper.yaml');
  // As the kubelet swaps a mounted ConfigMap: the new text whole, at once.
  const replace = async (text: string) => {
    await writeFile(join(dir, 'next'), text);
    await rename(join(dir, 'next'), config);
  };
  await replace('podCleanupWorkers: 4\n');
  const p = startCli(
    ['controller', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--config', config, '--leader-elect=false', '--dry-run',
      '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0', '--log-format', 'json'],
    { timeoutMs: 110_000 },
  );
  t.after(() => p.child.kill('SIGKILL'));
  const port = await metricsPortOf(p);
  await cluster.waitFor(async () => sample(await scrape(port), 'finalizer_sweeper_config_last_reload_successful') === 1, 20_000, 'the reload gauge at 1');
  return { p, port, config, replace };
}

test('a broken config file keeps the controller running, logged once and counted; the fixed one then restarts it with exit 0', { timeout: 120_000 }, async (t) => {
  const { p, port, config, replace } = await running(t);
  await replace('podCleanupWorkers: many\n');
  const line = JSON.parse(await p.untilStderr((l) => l.includes(INVALID))) as { level: string; key: string; err: string; config: string };
  // Two more reads of the same bad text: still running, nothing more said.
  await sleep(CONFIG_POLL_MS * 2 + 1_000);
  const metrics = await scrape(port);

  assert.equal(p.child.exitCode, null, 'still running');
  assert.equal(line.level, 'error');
  assert.equal(line.key, 'podCleanupWorkers');
  assert.match(line.err, /"many"/);
  assert.equal(line.config, config);
  assert.equal(logLines(p.stderr()).filter((l) => l.msg === INVALID).length, 1, 'said once');
  assert.equal(sample(metrics, 'finalizer_sweeper_config_last_reload_successful'), 0);
  assert.equal(sample(metrics, 'finalizer_sweeper_config_reload_failures_total'), 1);

  await replace('podCleanupWorkers: 16\n');
  const { code } = await p.result;

  assert.equal(code, 0);
  assert.match(p.stderr(), /"the config file changed: stopping, so that the container restarts with the new settings"/);
  assert.match(p.stderr(), /"controller stopped"/);
});

test('owner settings that discovery refuses keep the controller running, as the restart would exit 2 on them', { timeout: 120_000 }, async (t) => {
  const { p, port, replace } = await running(t);
  // The file is valid; argoproj.io/v1alpha1 on this bed serves workflows only, so a start with
  // it is refused (owner-settings.test.ts), and so is the reload.
  await replace('ownerResource: cronworkflows\nownerKind: CronWorkflow\n');
  const line = JSON.parse(await p.untilStderr((l) => l.includes(INVALID))) as { err: string };
  await sleep(CONFIG_POLL_MS * 2 + 1_000);

  assert.equal(p.child.exitCode, null, 'still running');
  assert.match(line.err, /owner settings do not name/);
  assert.equal(sample(await scrape(port), 'finalizer_sweeper_config_last_reload_successful'), 0);

  await replace('podCleanupWorkers: 4\nownerResource: workflows\n');
  const { code } = await p.result;
  assert.equal(code, 0, 'a change that names the owner as discovery serves it restarts');
});
