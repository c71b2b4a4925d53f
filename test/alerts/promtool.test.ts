// The alerts of deploy/components/alerts, tested with promtool (Debian's `prometheus` package
// ships it; .ci/run installs it): for each rule, series that make it fire and series that must
// not, a standby replica among them. The rules are read from the PrometheusRule itself, the only
// copy, whose spec is a Prometheus rule file as it stands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { load } from 'js-yaml';

const run = promisify(execFile);
const ALERTS = join(import.meta.dirname, '..', '..', 'deploy', 'components', 'alerts');

test('promtool: every alert fires in its scene and stays silent in a healthy pair (leader and standby)', async (t) => {
  const found = await run('promtool', ['--version']).catch(() => null);
  assert.ok(found, 'promtool is needed for the alert tests: install Debian\'s prometheus package (apt-get install prometheus), as .ci/run does');
  const dir = await mkdtemp(join(tmpdir(), 'alerts-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const rule = load(await readFile(join(ALERTS, 'prometheusrule.yaml'), 'utf8')) as { kind: string; spec: { groups: unknown[] } };
  assert.equal(rule.kind, 'PrometheusRule');
  await writeFile(join(dir, 'rules.yaml'), JSON.stringify(rule.spec)); // JSON is YAML
  await copyFile(join(ALERTS, 'tests.yaml'), join(dir, 'tests.yaml'));

  await run('promtool', ['check', 'rules', join(dir, 'rules.yaml')]);
  const { stdout } = await run('promtool', ['test', 'rules', join(dir, 'tests.yaml')]).catch((err: { stdout?: string; stderr?: string }) => {
    throw new Error(`promtool test rules failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  });
  assert.match(stdout, /SUCCESS/);
});

test('every alert has a runbook in docs/runbooks, named after it, and a severity', async () => {
  const rule = load(await readFile(join(ALERTS, 'prometheusrule.yaml'), 'utf8')) as { spec: { groups: Array<{ rules: Array<{ alert: string; labels: { severity?: string }; annotations: { runbook_url?: string } }> }> } };
  const alerts = rule.spec.groups.flatMap((g) => g.rules);
  assert.ok(alerts.length >= 10);
  for (const a of alerts) {
    assert.match(a.labels.severity ?? '', /^(critical|warning|info)$/, a.alert);
    const url = a.annotations.runbook_url ?? '';
    assert.match(url, /^docs\/runbooks\/FinalizerSweeper\w+\.md$/, a.alert);
    await readFile(join(ALERTS, '..', '..', '..', url), 'utf8');
  }
});
