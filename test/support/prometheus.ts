// A real Prometheus (Debian's `prometheus`, on PATH) on loopback for a test: it scrapes the given
// controllers every second as one job and evaluates the alert rules of deploy/components/alerts,
// loaded from the PrometheusRule object itself, every second.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { load } from 'js-yaml';
import { freePort } from '../../src/testbed/control-plane-files.ts';

export const DEPLOY_COMPONENTS = join(import.meta.dirname, '..', '..', 'deploy', 'components');
export const JOB = 'finalizer-sweeper';

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Alert {
  labels: Record<string, string> & { alertname: string };
  state: 'pending' | 'firing';
}

export interface Prometheus {
  api<T>(path: string): Promise<T>;
  query(expr: string): Promise<Sample[]>;
  alerts(): Promise<Alert[]>;
  /** rule is one alerting rule of the shipped PrometheusRule, by name. */
  rule(name: string): { expr: string };
}

export interface RuleFile {
  groups: Array<{ name: string; rules: Array<{ alert?: string; expr: string }> }>;
}

/**
 * startPrometheus starts Prometheus scraping `targets` (host:port plus labels); it stops when the
 * test ends. It evaluates `rules` (a PrometheusRule's spec), by default the shipped one's.
 */
export async function startPrometheus(t: TestContext, targets: Array<{ address: string; labels: Record<string, string> }>, rules?: RuleFile): Promise<Prometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'prometheus-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const ruleObject = rules !== undefined ? { spec: rules } : (load(await readFile(join(DEPLOY_COMPONENTS, 'alerts', 'prometheusrule.yaml'), 'utf8')) as { spec: RuleFile });
  await writeFile(join(dir, 'rules.yaml'), JSON.stringify(ruleObject.spec));
  const staticConfigs = targets.map((x) => ({ targets: [x.address], labels: x.labels }));
  const config = { global: { scrape_interval: '1s', evaluation_interval: '1s' }, rule_files: [join(dir, 'rules.yaml')], scrape_configs: [{ job_name: JOB, static_configs: staticConfigs }] };
  await writeFile(join(dir, 'prometheus.yml'), JSON.stringify(config));
  const port = await freePort();
  const prometheus = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  const exited = new Promise((resolve) => prometheus.on('exit', resolve));
  t.after(async () => {
    prometheus.kill('SIGTERM');
    await exited;
  });
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  const alerting = ruleObject.spec.groups.flatMap((g) => g.rules);
  return {
    api,
    query: (expr) => api<{ result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`).then((d) => d.result),
    alerts: () => api<{ alerts: Alert[] }>('/api/v1/alerts').then((d) => d.alerts),
    rule: (name) => {
      const r = alerting.find((x) => x.alert === name);
      if (r === undefined) throw new Error(`no alert ${name} in the PrometheusRule`);
      return r;
    },
  };
}
