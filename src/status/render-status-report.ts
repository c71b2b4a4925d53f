// renderStatusReport is `status`'s text output: per install, the verdict first, then why, then
// the evidence (leader, pods, selection, metrics, latest Events) and what could not be checked.
// Colour only when asked (stdout is a terminal).

import { styleText } from 'node:util';
import type { InstallReport, StatusReport } from './status-report.ts';

type Paint = (format: Parameters<typeof styleText>[0], text: string) => string;

export function renderStatusReport(r: StatusReport, color: boolean): string {
  const paint: Paint = color ? (format, text) => styleText(format, text, { validateStream: false }) : (_, text) => text;
  const lines: string[] = [paint(r.installs.length > 0 && r.installs.every((i) => i.works) ? 'green' : 'red', r.summary)];
  for (const i of r.installs) lines.push('', ...install(i, paint));
  return lines.join('\n') + '\n';
}

function install(r: InstallReport, paint: Paint): string[] {
  const i = r.install;
  const scope = i.scope === 'cluster' ? 'every namespace' : i.scope === 'namespaces' ? `namespaces ${i.namespaces.join(', ')}` : 'unknown scope';
  const lines = [
    paint('bold', `${i.flavour} ${i.namespace}/${i.deployment}`) + (i.beside.length > 0 ? ` (beside ${i.beside.join(', ')})` : '') + `, watching ${scope}`,
    paint(r.works ? 'green' : 'red', r.summary),
  ];
  for (const p of r.problems.slice(1)) lines.push(paint('red', `also: ${p}`));
  for (const w of r.warnings) lines.push(paint('yellow', `warning: ${w}`));
  lines.push(`replicas: ${r.replicas.available} available of ${r.replicas.desired}`);
  for (const p of r.pods ?? []) lines.push(`  pod ${p.name}: ${p.phase}${p.ours === null ? '' : `, finalizer-sweeper ${p.ours.running ? 'running' : 'not running'}${p.ours.restarts > 0 ? `, ${p.ours.restarts} restarts` : ''}`}`);
  if (r.leader !== null) {
    const when = r.leader.renewedSecondsAgo === null ? '' : `, renewed ${r.leader.renewedSecondsAgo}s ago`;
    lines.push(`leader: ${r.leader.holder ?? 'none'} (Lease ${r.leader.lease}${when}${r.leader.valid ? '' : ', expired'})`);
  }
  if (r.selection !== null) {
    const s = r.selection;
    const left = Object.entries(s.leftOut).map(([id, n]) => `${id}: ${n}`).join(', ');
    lines.push(`selector: ${s.selector} (instance ID ${s.instanceId ?? 'none'}); selects ${s.selected >= s.limit ? `${s.limit} or more` : s.selected} workflow pod${s.selected === 1 ? '' : 's'}${left === '' ? '' : `; leaves out by instance ID ${left}`}`);
  }
  if (r.metrics !== null) {
    const m = r.metrics;
    const ready = Object.entries(m.ready).map(([check, ok]) => `${check} ${ok ? 'ok' : 'FAILING'}`).join(', ');
    const removals = Object.entries(m.removals).map(([result, n]) => `${result} ${n}`).join(', ');
    lines.push(`metrics (${m.from}): ${ready === '' ? 'no readiness series' : ready}; leader ${m.leader === null ? 'unknown' : m.leader ? 'yes' : 'no'}`);
    lines.push(`  since start: removals ${removals === '' ? 'none' : removals}; 403s ${m.forbiddenDenied}; list/watch failures ${m.listWatchFailures}`);
  }
  if (r.events !== null) {
    lines.push(r.events.length === 0 ? 'latest Events: none' : 'latest Events:');
    for (const e of r.events) lines.push(`  ${e.lastSeen ?? '?'} ${e.type} ${e.reason} on ${e.regarding}${e.count > 1 ? ` (x${e.count})` : ''}: ${e.message}`);
  }
  if (r.unchecked.length > 0) {
    lines.push(paint('yellow', 'Could not check:'));
    for (const u of r.unchecked) lines.push(`  ${u}`);
  }
  return lines;
}
