// The Grafana dashboard's shape, as Grafana 10+ imports it: its variables, and every panel's
// queries filtered by them. That each query returns data is tested on a live Prometheus
// (test/integration/prometheus.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const DASHBOARD = join(import.meta.dirname, '..', '..', 'deploy', 'components', 'dashboard', 'finalizer-sweeper.json');

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource: { uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets: Array<{ refId: string; expr: string }>;
}

test('the dashboard has namespace and job variables, and every panel queries by them through the chosen data source', async () => {
  const d = JSON.parse(await readFile(DASHBOARD, 'utf8')) as { uid: string; schemaVersion: number; templating: { list: Array<{ name: string; type: string }> }; panels: Panel[] };
  assert.equal(d.uid, 'finalizer-sweeper');
  assert.ok(d.schemaVersion >= 36, 'Grafana 10 and later');
  assert.deepEqual(d.templating.list.map((v) => [v.name, v.type]), [['datasource', 'datasource'], ['namespace', 'query'], ['job', 'query']]);
  assert.equal(new Set(d.panels.map((p) => p.id)).size, d.panels.length, 'panel ids are unique');
  for (const p of d.panels) {
    assert.equal(p.datasource.uid, '${datasource}', p.title);
    assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title} fits Grafana's 24 columns`);
    assert.ok(p.targets.length > 0, p.title);
    for (const t of p.targets) assert.match(t.expr, /namespace=~"\$namespace", job=~"\$job"/, `${p.title}: ${t.expr}`);
  }
  const titles = d.panels.map((p) => p.title).join(' | ');
  for (const want of ['Removals', 'latency', 'Queue depth', 'Queue wait', 'Terminating', 'API requests', '429', 'Concurrency', 'Leader', 'Watch', 'Memory', 'Event-loop']) {
    assert.ok(titles.includes(want), `a panel on ${want}`);
  }
});
