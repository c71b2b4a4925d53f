import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../config/settings.ts';
import { shellQuoted, sweepCommand } from './sweep-command-line.ts';

test('with the default settings, only the namespace; --dry-run on the line to run first', () => {
  assert.deepEqual(sweepCommand(DEFAULTS, 'ns', false), {
    argv: ['sweep', '--namespace', 'ns'],
    dryRun: 'finalizer-sweeper sweep --namespace ns --dry-run',
    command: 'finalizer-sweeper sweep --namespace ns',
  });
});

test('every setting the decision or the cluster depends on is carried when not the default, and nothing else', () => {
  const settings = {
    ...DEFAULTS,
    kubeconfig: '/home/me/.kube/config',
    podSelector: 'team in (a, b)',
    instanceId: 'blue',
    finalizer: 'example.com/status',
    owner: { ...DEFAULTS.owner, version: 'v1' },
    forceAfterMs: 3_600_000,
    nodeStatus: 'all' as const,
    namespaceDeleting: false,
    maxRemovals: 10,
    podCleanupWorkers: 3,
  };
  const s = sweepCommand(settings, 'ns', true);
  assert.deepEqual(s.argv, [
    'sweep', '--namespace', 'ns', '--kubeconfig', '/home/me/.kube/config', '--pod-selector', 'team in (a, b)', '--instance-id', 'blue',
    '--finalizer', 'example.com/status', '--owner-version', 'v1', '--force-after', '1h0m0s', '--node-status', 'all', '--namespace-deleting=false', '--events', 'none',
  ]);
  assert.equal(s.command, "finalizer-sweeper sweep --namespace ns --kubeconfig /home/me/.kube/config --pod-selector 'team in (a, b)' --instance-id blue --finalizer example.com/status --owner-version v1 --force-after 1h0m0s --node-status all --namespace-deleting=false --events none");
});

test('shell quoting: plain words stay, the rest in single quotes', () => {
  const cases: Array<[string, string]> = [
    ['workflows.argoproj.io/workflow', 'workflows.argoproj.io/workflow'],
    ['a,!b', "'a,!b'"],
    ['', "''"],
    ["it's", "'it'\\''s'"],
  ];
  for (const [word, quoted] of cases) assert.equal(shellQuoted(word), quoted, word);
});
