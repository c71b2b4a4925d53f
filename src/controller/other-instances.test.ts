// The instance-ID trap's detection: which pods the probe asks for, what a round costs, and what
// it reports. The selectors' meaning on a real API server is in test/integration/other-instances.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS } from '../config/settings.ts';
import type { ListOptions, MetaList } from '../kube/metadata-api.ts';
import type { LogFields } from '../log.ts';
import { silentLogger } from '../log.ts';
import { COUNT_LIMIT, findLeftOut, findLeftOutPods, instanceSelector, leftOutSelector, MAX_INSTANCES, NO_INSTANCE, OtherInstances, type PodLister } from './other-instances.ts';

const L = 'workflows.argoproj.io/controller-instanceid';
const W = 'workflows.argoproj.io/workflow';

test('the left-out selector: pods with an instance ID when none is set, pods with another or none when one is; those found excluded', () => {
  const none = { ...DEFAULTS, instanceId: null };
  const ours = { ...DEFAULTS, instanceId: 'prod' };
  for (const [settings, found, want] of [
    [none, [], `${W},${L}`],
    [none, ['a', 'b'], `${W},${L},${L} notin (a,b)`],
    [ours, [], `${W},${L} notin (prod)`],
    [ours, ['a'], `${W},${L} notin (prod,a)`],
    [ours, [NO_INSTANCE], `${W},${L} notin (prod),${L}`],
    [{ ...none, podSelector: '' }, [], L],
  ] as const) {
    assert.equal(leftOutSelector(settings, found), want, `${settings.instanceId} ${found.join(',')}`);
  }
  assert.equal(instanceSelector(none, 'a'), `${W},${L}=a`);
  assert.equal(instanceSelector(ours, NO_INSTANCE), `${W},!${L}`);
});

/** pods answers the probe's lists from a table: selector → the instance IDs of the pods it selects. */
function lister(answers: Record<string, Array<string | null>>): PodLister & { asked: Array<{ namespace: string | null } & ListOptions> } {
  const asked: Array<{ namespace: string | null } & ListOptions> = [];
  const list = async (namespace: string | null, opts: ListOptions): Promise<MetaList> => {
    asked.push({ namespace, ...opts });
    const ids = answers[opts.labelSelector ?? ''] ?? [];
    const items = ids.slice(0, opts.limit).map((id, i) => {
      const labels: Record<string, string> = id === null ? { [W]: 'wf' } : { [W]: 'wf', [L]: id };
      return { metadata: { namespace: 'ns', name: `p${i}`, uid: `u${i}`, resourceVersion: '1', labels } };
    });
    return { resourceVersion: '9', continue: ids.length > (opts.limit ?? Infinity) ? 'more' : null, items };
  };
  return Object.assign(list, { asked });
}

test('a round asks limit=1 for a left-out pod, counts its instance ID in one page, excludes it, and asks again until none is left', async () => {
  const s = { ...DEFAULTS, instanceId: null };
  const list = lister({
    [`${W},${L}`]: ['a', 'b', 'a'],
    [`${W},${L}=a`]: ['a', 'a', 'a'],
    [`${W},${L},${L} notin (a)`]: ['b'],
    [`${W},${L}=b`]: Array.from({ length: COUNT_LIMIT + 7 }, () => 'b'),
    [`${W},${L},${L} notin (a,b)`]: [],
  });

  const counts = await findLeftOut(list, s);

  assert.deepEqual([...counts], [['a', 3], ['b', COUNT_LIMIT]]);
  assert.deepEqual(list.asked.map((r) => [r.labelSelector, r.limit]), [
    [`${W},${L}`, 1], [`${W},${L}=a`, COUNT_LIMIT], [`${W},${L},${L} notin (a)`, 1], [`${W},${L}=b`, COUNT_LIMIT], [`${W},${L},${L} notin (a,b)`, 1],
  ]);
  assert.ok(list.asked.every((r) => r.priority === 9 && r.namespace === null), 'the least urgent lane; cluster-wide when no namespace is set');
});

test('with an instance ID set, pods without one are counted as <none>; each namespace watched is asked apart', async () => {
  const s = { ...DEFAULTS, instanceId: 'prod', namespaces: ['n1', 'n2'] };
  const list = lister({ [`${W},${L} notin (prod)`]: [null], [`${W},!${L}`]: [null, null] });

  const counts = await findLeftOut(list, s);

  assert.deepEqual([...counts], [[NO_INSTANCE, 4]]);
  assert.deepEqual([...new Set(list.asked.map((r) => r.namespace))], ['n1', 'n2']);
});

test('a round costs at most 2 requests per instance ID and looks for at most MAX_INSTANCES of them', async () => {
  const s = { ...DEFAULTS, instanceId: null };
  let n = 0;
  const list: PodLister = async (_ns, opts) => {
    n++;
    const id = opts.limit === 1 ? `i${n}` : 'x';
    return { resourceVersion: '1', continue: null, items: [{ metadata: { namespace: 'ns', name: 'p', uid: 'u', resourceVersion: '1', labels: { [L]: id } } }] };
  };

  const counts = await findLeftOut(list, s);

  assert.equal(counts.size, MAX_INSTANCES);
  assert.equal(n, 2 * MAX_INSTANCES);
});

test('findLeftOutPods counts the pods waiting with our finalizer and names a few, those waiting first, in each namespace', async () => {
  const s = { ...DEFAULTS, instanceId: null, namespaces: ['n1', 'n2'] };
  const pod = (namespace: string, name: string, deleting: boolean, finalizers: string[]) =>
    ({ metadata: { namespace, name, uid: name, resourceVersion: '1', labels: { [W]: 'wf', [L]: 'b' }, finalizers, ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) } });
  const pages: Record<string, ReturnType<typeof pod>[]> = {
    n1: [pod('n1', 'running', false, [s.finalizer]), pod('n1', 'other-finalizer', true, ['example.com/x']), pod('n1', 'orphan', true, [s.finalizer])],
    n2: [pod('n2', 'orphan', true, ['example.com/x', s.finalizer]), pod('n2', 'done', false, [])],
  };
  const list: PodLister = async (namespace, opts) => {
    const items = opts.labelSelector === `${W},${L}` ? (pages[namespace ?? '']?.slice(0, 1) ?? []) : opts.labelSelector === `${W},${L}=b` ? (pages[namespace ?? ''] ?? []) : [];
    return { resourceVersion: '1', continue: null, items };
  };

  const found = await findLeftOutPods(list, s);

  assert.deepEqual([...found], [['b', { pods: 5, waiting: 2, examples: ['n1/orphan', 'n1/running', 'n1/other-finalizer'] }]]);
  assert.deepEqual([...(await findLeftOut(list, s))], [['b', 5]], 'findLeftOut counts the same pods');
});

test('each instance ID is warned about once, the gauge replaced each round; a failed look changes nothing', async () => {
  const warnings: LogFields[] = [];
  const reported: Array<Map<string, number>> = [];
  let answers: Record<string, Array<string | null>> = { [`${W},${L}`]: ['a'], [`${W},${L}=a`]: ['a'] };
  let failing = false;
  const probe = new OtherInstances({
    settings: { ...DEFAULTS, instanceId: null },
    list: async (ns, opts) => {
      if (failing) throw new Error('503');
      return lister(answers)(ns, opts);
    },
    metrics: { otherInstancePods: (c) => void reported.push(new Map(c)) },
    logger: { ...silentLogger(), warn: (fields) => void warnings.push(fields) },
  });

  await probe.probe();
  await probe.probe();
  answers = { [`${W},${L}`]: ['b'], [`${W},${L}=b`]: ['b', 'b'] };
  await probe.probe();
  failing = true;
  await probe.probe();

  assert.deepEqual(warnings.map((w) => [w['instanceId'], w['pods'], w['ours']]), [['a', 1, NO_INSTANCE], ['b', 2, NO_INSTANCE]]);
  assert.deepEqual(reported.map((m) => [...m]), [[['a', 1]], [['a', 1]], [['b', 2]]]);
});
