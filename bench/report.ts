// The benchmark's report: Markdown tables (printed, and pasted into BENCHMARKS.md) and the JSON
// file under bench/results/.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format, type RunResult, type ScenarioResult } from './lib/result.ts';

/** renderRun renders the whole run as Markdown. */
export function renderRun(run: RunResult): string {
  const m = run.machine;
  const head = [
    `Run of ${run.date} (\`${run.command}\`, scale ${run.scale}, ${Math.round(run.seconds)} s in all).`,
    `Machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}, Kubernetes ${m.kubernetes}.`,
  ];
  return [head.join('\n'), ...run.scenarios.map(renderScenario)].join('\n\n');
}

/** renderScenario renders one scenario: a table with a row per contender, then its goals. */
export function renderScenario(s: ScenarioResult): string {
  const size = Object.entries(s.size).map(([k, v]) => `${v.toLocaleString('en-US')} ${k}`).join(', ');
  const out = [`### ${s.id}. ${s.title}${size ? ` (${size})` : ''}`, ''];
  const columns: string[] = [];
  for (const row of s.rows) for (const f of row.figures) if (!columns.includes(label(f.name, f.unit))) columns.push(label(f.name, f.unit));
  if (columns.length > WIDEST_TABLE) {
    // Rows that share few figures (the backlog's) read better one short table each than as one
    // table of mostly empty cells.
    for (const row of s.rows) {
      out.push(`**${row.contender}**${row.note ? `, ${row.note}` : ''}`, '', '| figure | |', '| --- | ---: |');
      for (const f of row.figures) out.push(`| ${label(f.name, f.unit)} | ${format(f.value)} |`);
      out.push('');
    }
  } else if (s.rows.length > 0) {
    out.push(`| contender | ${columns.join(' | ')} |`, `| --- |${columns.map(() => ' ---: |').join('')}`);
    for (const row of s.rows) {
      const cells = columns.map((c) => {
        const f = row.figures.find((x) => label(x.name, x.unit) === c);
        return f === undefined ? '—' : format(f.value);
      });
      out.push(`| ${row.contender}${row.note ? `, ${row.note}` : ''} | ${cells.join(' | ')} |`);
    }
    out.push('');
  }
  if (s.goals.length > 0) {
    out.push('| goal | measured | |', '| --- | --- | --- |');
    for (const g of s.goals) out.push(`| ${g.goal} | ${g.measured} | ${g.met === null ? 'not measured' : g.met === 'undecided' ? '**undecided**' : g.met ? 'met' : '**not met**'} |`);
    out.push('');
  }
  for (const n of s.notes) out.push(`- ${n}`);
  out.push(`- ${Math.round(s.seconds)} s; load average ${s.loadAverage.start.toFixed(1)} at the start, ${s.loadAverage.end.toFixed(1)} at the end.`);
  if (s.error) out.push(`- **failed**: ${s.error}`);
  return out.join('\n').trimEnd();
}

/** WIDEST_TABLE: past this many figure columns a scenario is printed one table per contender. */
const WIDEST_TABLE = 14;

function label(name: string, unit: string): string {
  return unit ? `${name} (${unit})` : name;
}

/**
 * writeResults writes the run as JSON: a full run (every scenario, scale 1) to latest.json, the
 * file BENCHMARKS.md is made from; any run, as it goes, to a file named by its start beside it.
 */
export async function writeResults(run: RunResult, dir: string, full: boolean): Promise<string> {
  await mkdir(dir, { recursive: true });
  const name = full ? 'latest.json' : `partial-${run.date.replace(/[:.]/g, '-')}.json`;
  const path = join(dir, name);
  await writeFile(path, `${JSON.stringify(run, null, 2)}\n`);
  return path;
}
