import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS } from '../config/settings.ts';
import type { PodMeta } from '../kube/objects.ts';
import { confirmCommand, freedWhenUninstalled, selectionDigest } from './uninstalled-selection.ts';

const OURS = 'workflows.argoproj.io/status';
const OWNER = DEFAULTS.owner;

function pod(name: string, over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns', name, uid: `${name}-uid`, resourceVersion: '7', deletionTimestamp: null, finalizers: [OURS],
    completedLabel: null, workflowLabel: 'wf', owner: { name: 'wf', uid: 'wf-uid' }, nodeId: null, ...over,
  };
}

test('freed: our finalizer and an ownerReference of the owner kind; not a pod named by its label alone, nor one without ours', () => {
  assert.equal(freedWhenUninstalled(pod('a'), OURS), true);
  assert.equal(freedWhenUninstalled(pod('b', { owner: null }), OURS), false);
  assert.equal(freedWhenUninstalled(pod('c', { finalizers: ['example.com/other'] }), OURS), false);
});

test('the digest is 16 hex digits and ignores the order pods were listed in', () => {
  const d = selectionDigest([pod('a'), pod('b')], OURS, OWNER);
  assert.match(d, /^[0-9a-f]{16}$/);
  assert.equal(selectionDigest([pod('b'), pod('a')], OURS, OWNER), d);
});

test('the digest changes with any pod\'s resourceVersion or uid, a pod more or less, the finalizer or the owner', () => {
  const base = [pod('a'), pod('b')];
  const d = selectionDigest(base, OURS, OWNER);
  const variants = [
    selectionDigest([pod('a'), pod('b', { resourceVersion: '8' })], OURS, OWNER),
    selectionDigest([pod('a'), pod('b', { uid: 'other' })], OURS, OWNER),
    selectionDigest([pod('a')], OURS, OWNER),
    selectionDigest([...base, pod('c')], OURS, OWNER),
    selectionDigest(base, 'example.com/other', OWNER),
    selectionDigest(base, OURS, { ...OWNER, resource: 'workflow' }),
    selectionDigest(base, OURS, { ...OWNER, kind: 'CronWorkflow' }),
    selectionDigest(base, OURS, { ...OWNER, group: 'argoproj.example' }),
  ];
  assert.equal(new Set([d, ...variants]).size, variants.length + 1);
});

test('the confirm command repeats the selection that differs from the defaults, quoted for a shell, and the digest', () => {
  assert.equal(confirmCommand(DEFAULTS, '0123456789abcdef'), 'finalizer-sweeper sweep --owner-crd-deleted --confirm 0123456789abcdef');
  const s = { ...DEFAULTS, kubeconfig: '/tmp/my config', namespaces: ['a', 'b'], podSelector: "x in (y),it's", owner: { ...DEFAULTS.owner, group: 'example.com' }, dryRun: true, podCleanupWorkers: 3 };
  assert.equal(
    confirmCommand(s, '0123456789abcdef'),
    `finalizer-sweeper sweep --owner-crd-deleted --kubeconfig '/tmp/my config' --namespace a,b --pod-selector 'x in (y),it'\\''s' --owner-group example.com --confirm 0123456789abcdef`,
  );
});
