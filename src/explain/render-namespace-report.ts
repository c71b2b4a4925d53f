// renderNamespaceReport is `explain namespace`'s text output: the verdict first, then why the
// namespace is Terminating (its conditions), its pods by finalizer and, for ours, by decision,
// what to do next, and what could not be checked. Colour only when asked (stdout is a terminal).

import { styleText } from 'node:util';
import Table from 'cli-table3';
import { formatDuration } from '../config/duration.ts';
import type { NamespaceReport, NextSteps, PodExample, VerdictGroup } from './namespace-report.ts';

type Paint = (format: Parameters<typeof styleText>[0], text: string) => string;

export function renderNamespaceReport(r: NamespaceReport, color: boolean): string {
  const paint: Paint = color ? (format, text) => styleText(format, text, { validateStream: false }) : (_, text) => text;
  const ns = r.namespace;
  const lines: string[] = [];
  lines.push(`${paint('bold', `namespace ${ns.name}`)}${ns.exists ? ` (uid ${ns.uid}, phase ${ns.phase ?? 'unknown'})` : ''}`);
  lines.push(paint(r.stuck ? 'red' : 'green', r.summary));
  if (!ns.exists) return lines.join('\n') + '\n';
  if (ns.terminating !== null) lines.push(`Terminating since ${ns.terminating.since} (${formatDuration(ns.terminating.seconds * 1000)}); its finalizers: ${ns.finalizers.length > 0 ? ns.finalizers.join(', ') : 'none left'}`);

  if (ns.conditions.length > 0) {
    const table = new Table({ head: ['condition', 'status', 'reason', 'message'], wordWrap: true, colWidths: [30, 8, 24, 54], style: style(color) });
    for (const c of ns.conditions) table.push([c.type, c.status, c.reason ?? '', c.message ?? '']);
    lines.push('', 'Conditions (the namespace controller\'s account of what it cannot remove):', table.toString());
  }
  if (ns.conditionsNote !== null) lines.push(paint('yellow', `Note: ${ns.conditionsNote}.`));

  lines.push('', `Pods: ${r.pods.listed} listed, ${r.pods.withFinalizers} with finalizers, ${r.pods.terminatingWithFinalizers} of them Terminating`);
  if (r.finalizers.length > 0) {
    const table = new Table({ head: ['finalizer', 'held by', 'pods (Termi-\nnating)', 'removed by', 'first pods'], wordWrap: true, colWidths: [30, 22, 10, 32, 26], style: style(color) });
    for (const g of r.finalizers) table.push([g.finalizer, g.party === 'ours' ? 'ours' : g.owner, `${g.pods} (${g.terminating})`, g.removedBy, examples(g.examples, g.pods)]);
    lines.push(table.toString());
  }

  const ours = r.finalizers.find((g) => g.party === 'ours');
  if (ours?.verdicts != null && ours.verdicts.length > 0) {
    lines.push('', paint('bold', `Our finalizer, ${ours.finalizer}, by the decision the controller would make now:`));
    const table = new Table({ head: ['decision', 'pods (Termi-\nnating)', 'first pods', 'their owners (state, pods)'], wordWrap: true, colWidths: [48, 10, 26, 28], style: style(color) });
    for (const v of ours.verdicts) table.push([verdict(v), `${v.pods} (${v.terminating})`, examples(v.examples, v.pods), owners(v)]);
    lines.push(table.toString());
  }

  const next = nextSteps(r.next, paint);
  if (next.length > 0) lines.push('', paint('bold', 'What to do next:'), ...next);
  if (r.unchecked.length > 0) lines.push('', paint('yellow', 'Could not check:'), ...r.unchecked.map((u) => `  - ${u}`));
  return lines.join('\n') + '\n';
}

function verdict(v: VerdictGroup): string {
  return v.notes.length === 0 ? v.says : `${v.says}\n${v.notes.map((n) => `- ${n}`).join('\n')}`;
}

function examples(pods: PodExample[], total: number): string {
  const names = pods.map((p) => p.name);
  return total > names.length ? `${names.join('\n')}\n… ${total - names.length} more` : names.join('\n');
}

function owners(v: VerdictGroup): string {
  const named = v.owners.map((o) => `${o.name} (${o.state}, ${o.pods})`);
  return v.ownersNamed > named.length ? `${named.join('\n')}\n… ${v.ownersNamed - named.length} more` : named.join('\n');
}

function nextSteps(n: NextSteps, paint: Paint): string[] {
  const lines: string[] = [];
  if (n.sweep !== null) {
    const what = [n.sweep.pods > 0 ? `frees the ${plural(n.sweep.pods, 'pod', 'pods')} that may go now` : '', n.sweep.readFirst > 0 ? `reads first, then decides, the ${n.sweep.readFirst} undecided` : ''].filter((s) => s !== '');
    lines.push(`  - a sweep of the namespace ${what.join(', and ')}; see what it would do first, then run it:`, `      ${paint('cyan', n.sweep.dryRun)}`, `      ${paint('cyan', n.sweep.command)}`);
  }
  if (n.uninstalled !== null) {
    lines.push(`  - the CRD ${n.uninstalled.crd} is deleted, every owner with it: a plain sweep cannot free the ${plural(n.uninstalled.pods, 'pod that names', 'pods that name')} one; sweep --owner-crd-deleted can, once its dry run has listed them:`, `      ${paint('cyan', n.uninstalled.command)}`);
  }
  if (n.ownersHolding > 0) {
    const listed = n.owners.map((o) => `${o.kind} ${o.name} (${plural(o.pods, 'pod', 'pods')}${o.why === 'owner-alive-offloaded' ? ', offloaded' : ''})`);
    const more = n.ownersHolding > listed.length ? `, and ${n.ownersHolding - listed.length} more` : '';
    lines.push(`  - pods wait for their owner to record them: look at ${listed.join(', ')}${more}; its engine records them, or deleting the owner once its status is no longer needed frees them (owner-gone)`);
    if (n.deleteOwners !== null) {
      lines.push("    in a Terminating namespace the owners are deleted only once their pods are gone, and their pods wait for them: with --namespace-deleting (the default) the controller and the sweep free those pods by themselves (namespace-deleting); with it off, delete the owners if their status is no longer needed, then sweep again:", `      ${paint('cyan', n.deleteOwners)}`);
    }
  }
  if (n.unattributable > 0) lines.push(`  - ${plural(n.unattributable, 'pod names', 'pods name')} no owner: no sweep frees them; their engine must, or an operator once their status is known not to be needed`);
  if (n.notWatched !== null) lines.push(`  - ${plural(n.notWatched.pods, 'pod carries', 'pods carry')} our finalizer but the selector "${n.notWatched.selector}" leaves them out: another install's (its --instance-id), or run with the --pod-selector and --instance-id that select them`);
  for (const o of n.others) lines.push(`  - ${o.finalizer} (${plural(o.pods, 'pod', 'pods')}): held by ${o.owner}; removed by ${o.removedBy}`);
  return lines;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function style(color: boolean): { head: string[]; border: string[] } {
  return { head: color ? ['cyan'] : [], border: color ? ['grey'] : [] };
}
