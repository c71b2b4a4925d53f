import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mismatched, renderUninstalled, totalsOf, type UninstalledPod, type UninstalledReport } from './uninstalled-report.ts';

const OURS = 'workflows.argoproj.io/status';

const pod = (name: string, over: Partial<UninstalledPod> = {}): UninstalledPod => ({
  namespace: 'argo', name, uid: `${name}-uid`, resourceVersion: '42', finalizers: ['example.com/first', OURS], owner: { name: 'wf', uid: 'wf-uid' }, result: 'listed', error: null, ...over,
});

function report(over: Partial<UninstalledReport> = {}): UninstalledReport {
  return {
    mode: 'owner-crd-deleted', crd: 'workflows.argoproj.io', ownerKind: 'Workflow', finalizer: OURS,
    confirmation: { state: 'uninstalled', detail: 'every Workflow went with the CRD' },
    dryRun: true, digest: '0123456789abcdef', confirmed: null, command: 'finalizer-sweeper sweep --owner-crd-deleted --confirm 0123456789abcdef',
    podsListed: 3, otherPodsWithFinalizer: 1, pods: [pod('a'), pod('b')], totals: totalsOf([]), interrupted: false, apiRequests: 6, wallSeconds: 0.25,
    ...over,
  };
}

test('a dry run lists the pods with their finalizers, the digest, and the command that confirms it', () => {
  assert.equal(renderUninstalled(report()), [
    '--owner-crd-deleted confirmed: every Workflow went with the CRD',
    '2 pods holding workflows.argoproj.io/status and naming a Workflow as owner (of 3 listed); only workflows.argoproj.io/status is removed, the other finalizers stay in their order:',
    '  argo/a uid a-uid resourceVersion 42 owner wf finalizers example.com/first,workflows.argoproj.io/status',
    '  argo/b uid b-uid resourceVersion 42 owner wf finalizers example.com/first,workflows.argoproj.io/status',
    '1 other pod holding workflows.argoproj.io/status without an ownerReference of kind Workflow in that group: left alone.',
    'digest: 0123456789abcdef',
    'dry run: nothing was written. To remove workflows.argoproj.io/status from exactly these pods, run:',
    '  finalizer-sweeper sweep --owner-crd-deleted --confirm 0123456789abcdef',
    '0.3 s, 6 API requests',
    '',
  ].join('\n'));
});

test('no pod to free: said, with what to check, and no command', () => {
  const text = renderUninstalled(report({ pods: [], command: null }));
  assert.match(text, /^0 pods holding .* \(of 3 listed\): nothing to free\. A misspelt --owner-kind or --owner-group/m);
  assert.match(text, /^dry run: nothing was written\.$/m);
  assert.doesNotMatch(text, /--confirm/);
});

test('a digest that no longer matches: nothing written, the new digest, and the listing as a new dry run', () => {
  const r = report({ confirmed: 'fedcba9876543210' });
  assert.equal(mismatched(r), true);
  assert.match(renderUninstalled(r), /the pods changed since the dry run that printed fedcba9876543210: the digest is now 0123456789abcdef\. Nothing was written\. The listing above is a new dry run: check it, then run:\n {2}finalizer-sweeper sweep/);
});

test('a confirmed run reports each pod\'s outcome and the counts', () => {
  const pods = [pod('a', { result: 'removed' }), pod('b', { result: 'changed', error: 'the object has been modified' })];
  const text = renderUninstalled(report({ dryRun: false, confirmed: '0123456789abcdef', command: null, pods, totals: totalsOf(pods) }));
  assert.match(text, /argo\/b .* {2}changed: the object has been modified$/m);
  assert.match(text, /^removed 1, changed since the confirmation 1 \(left alone: run a new dry run\), already gone 0, failed 0, not handled 0$/m);
  assert.doesNotMatch(text, /dry run: nothing was written/);
});
