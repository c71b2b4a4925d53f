import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OwnerSettingsRefused, proveLater } from './settings-proof.ts';
import { ApiError } from '../kube/errors.ts';
import { recordingLogger } from '../log.ts';

const OWNER = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };
const VERBS = ['get', 'list', 'watch'];
const notServed = new ApiError(404, 'NotFound', 'the server could not find the requested resource');
const down = new ApiError(503, 'ServiceUnavailable', 'down');
const only = (...resources: object[]) => ({ resources });

/** scripted answers discovery reads in turn, the last one for good. */
function scripted(answers: Array<Error | object>) {
  let reads = 0;
  const client = {
    request: async () => {
      const a = answers[Math.min(reads++, answers.length - 1)];
      if (a instanceof Error) throw a;
      return a;
    },
  } as never;
  return { client, reads: () => reads };
}

test('proveLater waits out a group/version not served, a failing read and Argo\'s CRDs going in one by one, then proves the settings', async () => {
  const { logger, records } = recordingLogger();
  const s = scripted([notServed, down, down, only({ name: 'cronworkflows', kind: 'CronWorkflow', namespaced: true, verbs: VERBS }), only({ name: 'workflows', kind: 'Workflow', namespaced: true, verbs: VERBS })]);
  let proven = 0;
  await proveLater({ client: s.client, owner: OWNER, logger, signal: new AbortController().signal, onProven: () => proven++, recheckMs: 1 });
  assert.equal(proven, 1);
  assert.equal(s.reads(), 5);
  assert.deepEqual(records.map((r) => r.level), ['warn', 'info'], 'one warning for the failing reads, one line once proven');
});

test('proveLater refuses settings that discovery shows to name another kind, once served', async () => {
  const { logger } = recordingLogger();
  const s = scripted([notServed, only({ name: 'workflows', kind: 'CronWorkflow', namespaced: true, verbs: VERBS })]);
  await assert.rejects(
    proveLater({ client: s.client, owner: OWNER, logger, signal: new AbortController().signal, onProven: () => assert.fail('not proven'), recheckMs: 1 }),
    (err: unknown) => err instanceof OwnerSettingsRefused && /serves workflows as kind CronWorkflow, not Workflow/.test(err.message),
  );
});

test('proveLater ends without a verdict when the signal aborts', async () => {
  const { logger } = recordingLogger();
  const stop = new AbortController();
  const s = scripted([notServed]);
  const running = proveLater({ client: s.client, owner: OWNER, logger, signal: stop.signal, onProven: () => assert.fail('not proven'), recheckMs: 60_000 });
  setTimeout(() => stop.abort(), 10);
  await running;
  assert.equal(s.reads(), 1);
});
