import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COUNTED, OwnerKindCheck, judgeOwnerKind, ownershipOf, type Ownership } from './owner-kind.ts';
import type { MetaObject, OwnerRef } from '../kube/objects.ts';

const FIN = 'workflows.argoproj.io/status';
const CRON = { group: 'argoproj.io', version: 'v1alpha1', resource: 'cronworkflows', kind: 'CronWorkflow' };
const WORKFLOW = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };

let uids = 0;
function pod(refs: Array<Partial<OwnerRef>>, finalizers: string[] = [FIN]): MetaObject {
  const n = ++uids;
  return { metadata: { namespace: 'ns', name: `p${n}`, uid: `u${n}`, resourceVersion: '1', finalizers, ownerReferences: refs.map((r) => ({ name: 'o', uid: `o${n}`, ...r }) as OwnerRef) } };
}
const ref = (kind: string, controller = true, apiVersion = 'argoproj.io/v1alpha1'): Partial<OwnerRef> => ({ apiVersion, kind, controller });

test('ownershipOf reads what a pod says of its owner', () => {
  const cases: Array<[string, MetaObject, Ownership]> = [
    ['without our finalizer: not selected', pod([ref('Workflow')], ['other']), { kind: 'unselected' }],
    ['controlled by the configured kind', pod([ref('CronWorkflow')]), { kind: 'owner' }],
    ['the configured kind as a plain ownerReference, as toPodMeta attributes it', pod([ref('Workflow'), ref('CronWorkflow', false)]), { kind: 'owner' }],
    ['the configured kind under another version', pod([ref('CronWorkflow', true, 'argoproj.io/v2')]), { kind: 'owner' }],
    ['controlled by another kind of the group', pod([ref('Workflow')]), { kind: 'foreign', ownerKind: 'Workflow' }],
    ['another kind of the group, not controlling', pod([ref('Workflow', false)]), { kind: 'none' }],
    ['controlled by another group', pod([ref('ReplicaSet', true, 'apps/v1')]), { kind: 'none' }],
    ['the configured kind of another group', pod([ref('CronWorkflow', true, 'example.com/v1')]), { kind: 'none' }],
    ['no ownerReference', pod([]), { kind: 'none' }],
    ['an ownerReference without a UID is none', pod([{ ...ref('Workflow'), uid: '' }]), { kind: 'none' }],
  ];
  for (const [name, obj, want] of cases) assert.deepEqual(ownershipOf(obj, CRON, FIN), want, name);
});

test('judgeOwnerKind: wrong only when pods of another kind of the group are selected and none of the configured kind', () => {
  const wf = new Map([['Workflow', { pods: 3, example: 'ns/p' }]]);
  const cases: Array<[string, Parameters<typeof judgeOwnerKind>[0], string]> = [
    ['no pod', { owned: 0, foreign: new Map() }, 'undecided'],
    ['only pods of another kind', { owned: 0, foreign: wf }, 'wrong'],
    ['pods of the configured kind beside pods of another', { owned: 1, foreign: wf }, 'confirmed'],
    ['pods of the configured kind only', { owned: 2, foreign: new Map() }, 'confirmed'],
  ];
  for (const [name, tally, want] of cases) assert.equal(judgeOwnerKind(tally).kind, want, name);
});

test('OwnerKindCheck refuses CronWorkflow for pods controlled by their Workflow, naming both kinds and the settings', () => {
  const check = new OwnerKindCheck(CRON, FIN);
  assert.equal(check.verdict().kind, 'undecided');
  const p = pod([ref('Workflow')]);
  check.note(p);
  check.note(p); // the same pod again (an update): counted once
  check.note(pod([ref('Workflow')]));
  check.note(pod([ref('ReplicaSet', true, 'apps/v1')]));
  check.note(pod([ref('Workflow')], []));
  const refusal = check.refusal();
  assert.ok(refusal !== null);
  assert.match(refusal.message, /--owner-resource cronworkflows --owner-kind CronWorkflow/);
  assert.match(refusal.message, /no selected pod carrying workflows\.argoproj\.io\/status is controlled by a CronWorkflow/);
  assert.match(refusal.message, /another kind of argoproj\.io: Workflow \(2 pods, e\.g\. ns\/p\d+\)/);
  assert.match(refusal.message, /set --owner-kind and --owner-resource \(ownerKind, ownerResource in the config file\)/);
});

test('OwnerKindCheck: one pod of the configured kind settles it, whatever comes before or after', () => {
  const check = new OwnerKindCheck(WORKFLOW, FIN);
  check.note(pod([ref('CronWorkflow')]));
  assert.equal(check.verdict().kind, 'wrong');
  check.note(pod([ref('Workflow')]));
  check.note(pod([ref('CronWorkflow')]));
  assert.equal(check.verdict().kind, 'confirmed');
  assert.equal(check.refusal(), null);
});

test('OwnerKindCheck counts at most MAX_COUNTED pods of a kind', () => {
  const check = new OwnerKindCheck(CRON, FIN);
  for (let i = 0; i < MAX_COUNTED + 5; i++) check.note(pod([ref('Workflow')]));
  assert.match(check.refusal()?.message ?? '', new RegExp(`Workflow \\(${MAX_COUNTED} or more pods`));
});
