// renderPodReport is `explain pod`'s text output: the verdict first, then who holds the pod, our
// finalizer's decision and what would change it, the dry run, the admission webhooks a pod UPDATE
// reaches, the Events, and what could not be checked. Colour only when asked (stdout is a terminal).

import { styleText } from 'node:util';
import Table from 'cli-table3';
import { formatDuration } from '../config/duration.ts';
import { describePatchVerdict } from './patch-verdict.ts';
import type { AdmissionReport, NodeSignal, OursReport, PodReport } from './pod-report.ts';
import type { InterceptingWebhook } from './webhook-match.ts';

type Paint = (format: Parameters<typeof styleText>[0], text: string) => string;

export function renderPodReport(r: PodReport, color: boolean): string {
  const paint: Paint = color ? (format, text) => styleText(format, text, { validateStream: false }) : (_, text) => text;
  const lines: string[] = [];
  const id = r.pod.exists ? ` (uid ${r.pod.uid}, resourceVersion ${r.pod.resourceVersion})` : '';
  lines.push(`${paint('bold', `pod ${r.pod.namespace}/${r.pod.name}`)}${id}`);
  lines.push(paint(r.stuck ? 'red' : 'green', r.summary));
  if (r.terminating !== null) lines.push(`Terminating since ${r.terminating.since} (${formatDuration(r.terminating.seconds * 1000)})`);

  if (r.finalizers.length > 0) {
    const table = new Table({ head: ['finalizer', 'held by', 'removed by'], wordWrap: true, colWidths: [36, 34, 50], style: style(color) });
    for (const f of r.finalizers) table.push([f.finalizer, f.party === 'ours' ? `ours: ${f.owner}` : f.owner, f.removedBy]);
    lines.push('', table.toString());
  }
  if (r.ours !== null) lines.push('', ...ours(r.ours, paint));
  if (r.admission !== null) lines.push('', ...admission(r.pod.namespace, r.admission, paint, color));

  if (r.events !== null) {
    lines.push('', r.events.length === 0 ? 'Events: none' : 'Events (oldest first):');
    if (r.events.length > 0) {
      const table = new Table({ head: ['last seen', 'type', 'reason', 'from', 'message'], wordWrap: true, colWidths: [22, 9, 24, 20, 50], style: style(color) });
      for (const e of r.events) table.push([e.lastSeen ?? '', e.type, e.count > 1 ? `${e.reason} (x${e.count})` : e.reason, e.from, e.message]);
      lines.push(table.toString());
    }
  }
  if (r.unchecked.length > 0) lines.push('', paint('yellow', 'Could not check:'), ...r.unchecked.map((u) => `  - ${u}`));
  return lines.join('\n') + '\n';
}

function ours(o: OursReport, paint: Paint): string[] {
  const owner = o.owner;
  const ref = owner.attributedBy === null ? 'none named' : `${owner.kind} ${owner.name}${owner.uid === null ? '' : ` (uid ${owner.uid})`}, by ${owner.attributedBy}`;
  const state = owner.state + (owner.because === null ? '' : ` (${owner.because})`) + (owner.note === null ? '' : `: ${owner.note}`);
  const watched = o.watched.matches === null ? `not checked (selector ${o.watched.selector})` : o.watched.matches ? `yes (selector ${o.watched.selector})` : paint('yellow', `no: the controller's selector "${o.watched.selector}" does not select this pod (--pod-selector, --instance-id), so it never looks at it`);
  const lines = [
    paint('bold', `Our finalizer, ${o.finalizer}:`),
    `  watched:       ${watched}`,
    `  owner:         ${ref}: ${state}`,
    `  recorded by:   pod label ${yesNo(o.signals.podLabel)}; ${owner.kind} label ${yesNo(o.signals.workflowLabel)}; ${node(o.signals.node)}`,
    `  decision:      ${o.decision.says}`,
  ];
  if (o.changesWhen.length > 0) lines.push('  changes when:', ...o.changesWhen.map((c) => `    - ${c}`));
  if (o.patch !== null) lines.push(`  patch dry run: ${paint(o.patch.result === 'accepted' ? 'green' : 'red', describePatchVerdict(o.patch))}`);
  return lines;
}

function admission(namespace: string, a: AdmissionReport, paint: Paint, color: boolean): string[] {
  const missing = (['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'] as const).filter((k) => !a.checked.includes(k));
  const partly = missing.length === 0 ? '' : ` (${missing.map((k) => `${k}s`).join(', ')} could not be listed)`;
  if (a.webhooks.length === 0) return [`Admission webhooks on pod UPDATE in ${namespace}: none${partly}`];
  const lines = [paint('bold', `Admission webhooks on pod UPDATE in ${namespace}, which every finalizer removal goes through${partly}:`)];
  const table = new Table({ head: ['configuration', 'webhook', 'on failure', 'called at'], wordWrap: true, colWidths: [30, 40, 12, 44], style: style(color) });
  for (const w of a.webhooks) {
    const notes = [
      ...(w.matchConditions.length > 0 ? [`called only if its matchConditions hold, not evaluated here: ${w.matchConditions.join(', ')}`] : []),
      ...(w.namespaceSelector === 'not-checked' ? ['its namespaceSelector not checked'] : []),
    ];
    table.push([`${kindWord(w)} ${w.configuration}`, [w.webhook, ...notes.map((n) => `(${n})`)].join('\n'), w.failurePolicy, calledAt(w, paint)]);
  }
  lines.push(table.toString());
  for (const w of a.webhooks.filter((x) => x.blocks)) {
    lines.push(paint('red', `blocks: the webhook ${w.webhook} (${kindWord(w)} ${w.configuration}) fails closed (failurePolicy Fail) and its Service ${w.service?.namespace}/${w.service?.name} has no ready endpoint: the API server rejects every pod UPDATE it takes, so no finalizer comes off this pod, ours or any other, until the Service has a ready endpoint or the webhook is removed, set to failurePolicy Ignore, or kept off this namespace.`));
  }
  return lines;
}

function kindWord(w: InterceptingWebhook): string {
  return w.kind === 'MutatingWebhookConfiguration' ? 'mutating' : 'validating';
}

function calledAt(w: InterceptingWebhook, paint: Paint): string {
  if (w.service === null) return 'url, not checked';
  const at = `service ${w.service.namespace}/${w.service.name}`;
  if (w.service.readyEndpoints === null) return `${at}: endpoints not checked`;
  return w.service.readyEndpoints ? `${at}: ready` : paint('red', `${at}: no ready endpoint`);
}

function node(n: NodeSignal): string {
  const id = n.id === null ? '' : ` ${n.id}`;
  const read = n.readByController ? '' : ', not read by the controller for this pod';
  switch (n.state) {
    case 'fulfilled':
      return `node${id} fulfilled (${n.phase})${read}`;
    case 'not-fulfilled':
      return `node${id} not fulfilled (phase ${n.phase === '' ? '(none)' : n.phase}${n.taskResultSynced === false ? ', task result not synced' : ''}${n.note === null ? '' : `: ${n.note}`})${read}`;
    case 'missing':
      return `node${id} not in the stored status${read}`;
    case 'offloaded':
      return 'nodes offloaded to Argo\'s database (not read)';
    case 'unreadable':
      return `node status unreadable: ${n.note ?? ''}`;
    case 'not-read':
      return n.note === null ? 'node not read' : `node not read: ${n.note}`;
  }
}

function yesNo(v: boolean | null): string {
  return v === null ? 'unknown' : v ? 'yes' : 'no';
}

function style(color: boolean): { head: string[]; border: string[] } {
  return { head: color ? ['cyan'] : [], border: color ? ['grey'] : [] };
}
