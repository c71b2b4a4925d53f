// Reading a running CLI controller from outside, as an operator would: its /metrics endpoint
// (started with --metrics-bind-address 127.0.0.1:0) and its JSON log lines about the API budget.
import { logLines, type LogLine, type RunningCli } from './cli.ts';

/** metricsPortOf waits for the "controller starting" line and returns the port /metrics was bound to. */
export async function metricsPortOf(p: RunningCli): Promise<number> {
  const line = await p.untilStderr((l) => l.includes('"controller starting"'));
  return (JSON.parse(line) as { metricsPort: number }).metricsPort;
}

/** scrape fetches the Prometheus text of a controller's /metrics. */
export async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** sample reads one series, labels included exactly as exported: `name{a="b"}`; undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** sumOf adds up every series of a metric whose labels contain `having` (e.g. `code="429"`). */
export function sumOf(text: string, name: string, having = ''): number {
  return text
    .split('\n')
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(having))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** BudgetLine is one "API budget" log line (see src/commands/connect.ts). */
export interface BudgetLine extends LogLine {
  event: 'start' | 'apf-detected' | 'no-apf' | 'throttled' | 'grown' | 'recovered';
  mode: string;
  qps: number | 'none';
  burst: number | 'none';
  maxConcurrency: number;
  concurrency: number;
  reason: string;
  pauseMs?: number;
}

/** budgetLines lists the process's API budget log lines so far, in order. */
export function budgetLines(p: RunningCli): BudgetLine[] {
  return logLines(p.stderr()).filter((l): l is BudgetLine => l.msg.startsWith('API budget'));
}

/** untilBudgetEvent waits for the first API budget line of this kind and returns it. */
export async function untilBudgetEvent(p: RunningCli, event: BudgetLine['event']): Promise<BudgetLine> {
  await p.untilStderr((l) => l.startsWith('{') && l.includes('"API budget') && l.includes(`"event":"${event}"`));
  return budgetLines(p).find((l) => l.event === event) as BudgetLine;
}
