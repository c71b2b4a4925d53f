// The Grafana dashboard's shape, as Grafana 10+ imports it: its variables, every panel's queries
// filtered by them, and every metric they name one the controller exports. That each query
// returns data is tested on a live Prometheus (test/integration/prometheus.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Metrics } from '../../src/metrics/metrics.ts';

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
  for (const want of ['Removals', 'latency', 'Queue depth', 'Queue wait', 'Terminating', 'API requests', '429', 'Concurrency', 'Leader', 'Watch', 'Memory', 'Event-loop', 'Dry run', '403']) {
    assert.ok(titles.includes(want), `a panel on ${want}`);
  }
});

/** PROMQL_WORDS are PromQL's keywords, which read like metric names. */
const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'and', 'or', 'unless', 'inf', 'nan']);

/**
 * metricNames lists the metrics a PromQL expression selects: every name left once strings, label
 * matchers, ranges and label lists are taken out, that is not a function or a keyword.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  // A name followed by `(` is a function or an aggregation.
  return [...bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)].filter((m) => m[2] === undefined).map((m) => m[1] ?? '').filter((w) => !PROMQL_WORDS.has(w));
}

/** exported is every series name the controller's /metrics serves, from its `# TYPE` lines: histograms' _bucket, _sum and _count included. */
async function exported(): Promise<Set<string>> {
  const names = new Set<string>();
  const text = await new Metrics({ version: 'test' }).registry.metrics();
  for (const [, name = '', type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const suffixes = type === 'histogram' ? ['_bucket', '_sum', '_count'] : type === 'summary' ? ['', '_sum', '_count'] : [''];
    for (const suffix of suffixes) names.add(`${name}${suffix}`);
  }
  return names;
}

test('metricNames reads the metrics out of a query, not its functions, labels or keywords', () => {
  assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le) (rate(a_bucket{name="x", job=~"$job"}[5m])))'), ['a_bucket']);
  assert.deepEqual(metricNames('sum by (verb, code) (rate(b_total{code="429"}[5m])) or vector(0)'), ['b_total']);
  assert.deepEqual(metricNames('count(c_info{dry_run="true"}) or on() d / ignoring(x) e'), ['c_info', 'd', 'e']);
  assert.deepEqual(metricNames('up'), ['up']);
});

test('every metric a dashboard query or variable names is one the controller exports', async () => {
  const d = JSON.parse(await readFile(DASHBOARD, 'utf8')) as { templating: { list: Array<{ definition?: string }> }; panels: Panel[] };
  const names = await exported();
  const queries = [
    ...d.panels.flatMap((p) => p.targets.map((t) => ({ where: p.title, expr: t.expr }))),
    ...d.templating.list.flatMap((v) => (v.definition === undefined ? [] : [{ where: `variable ${v.definition}`, expr: v.definition.replace(/^label_values\(([^,{]+)[^)]*\)$/, '$1') }])),
  ];

  const unknown = queries.flatMap((q) => metricNames(q.expr).filter((n) => !names.has(n)).map((n) => `${q.where}: ${n}`));
  assert.deepEqual(unknown, []);
  assert.ok(queries.every((q) => metricNames(q.expr).length > 0), 'every query names a metric');
  for (const want of ['finalizer_sweeper_config_info', 'finalizer_sweeper_api_forbidden_total']) {
    assert.ok(queries.some((q) => metricNames(q.expr).includes(want)), `a query of ${want}`);
  }
});
