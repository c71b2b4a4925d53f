import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkOwnerSettings, discoveryPath, judgeOwnerSettings, type ApiResource } from './owner-settings.ts';
import { refusalOf } from './settings-proof.ts';
import { ApiError } from '../kube/errors.ts';
import type { OwnerResource } from '../config/settings.ts';

const WORKFLOWS: OwnerResource = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };
const VERBS = ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'];

/** What argoproj.io/v1alpha1 lists once Argo's CRDs are installed (a subset of its eight). */
const ARGO: ApiResource[] = [
  { name: 'clusterworkflowtemplates', kind: 'ClusterWorkflowTemplate', namespaced: false, verbs: VERBS },
  { name: 'cronworkflows', kind: 'CronWorkflow', namespaced: true, verbs: VERBS },
  { name: 'workflows', kind: 'Workflow', namespaced: true, verbs: VERBS },
  { name: 'workflows/status', kind: 'Workflow', namespaced: true, verbs: ['get', 'patch', 'update'] },
  { name: 'workflowtaskresults', kind: 'WorkflowTaskResult', namespaced: true, verbs: VERBS },
  { name: 'workflowtemplates', kind: 'WorkflowTemplate', namespaced: true, verbs: VERBS },
];

const cases: { name: string; owner: Partial<OwnerResource>; resources?: ApiResource[]; want: string; says?: RegExp }[] = [
  { name: "Argo's defaults", owner: {}, want: 'proven' },
  { name: 'cronworkflows, kind Workflow', owner: { resource: 'cronworkflows' }, want: 'mismatch', says: /serves cronworkflows as kind CronWorkflow, not Workflow/ },
  { name: 'workflowtemplates, kind Workflow', owner: { resource: 'workflowtemplates' }, want: 'mismatch', says: /as kind WorkflowTemplate, not Workflow/ },
  { name: 'cronworkflows, kind CronWorkflow: consistent (the pods then attribute to nothing: trim.ts)', owner: { resource: 'cronworkflows', kind: 'CronWorkflow' }, want: 'proven' },
  { name: 'the singular', owner: { resource: 'workflow' }, want: 'mismatch', says: /has no resource workflow; it serves kind Workflow as workflows/ },
  { name: 'the subresource', owner: { resource: 'workflows/status' }, want: 'mismatch', says: /has no resource workflows\/status/ },
  { name: 'a kind in the wrong case', owner: { kind: 'workflow' }, want: 'mismatch', says: /as kind Workflow, not workflow/ },
  { name: 'a cluster-scoped resource', owner: { resource: 'clusterworkflowtemplates', kind: 'ClusterWorkflowTemplate' }, want: 'mismatch', says: /cluster-scoped/ },
  { name: 'a resource that cannot be watched', owner: {}, resources: [{ name: 'workflows', kind: 'Workflow', namespaced: true, verbs: ['get', 'list'] }], want: 'mismatch', says: /without watch/ },
  { name: 'neither name served (a CRD missing)', owner: { resource: 'flows', kind: 'Flow' }, want: 'absent', says: /serves neither a resource flows nor a kind Flow \(argoproj.io\/v1alpha1 serves clusterworkflowtemplates/ },
  { name: 'an empty group/version', owner: {}, resources: [], want: 'absent', says: /serves no resource/ },
  { name: 'odd entries are skipped', owner: {}, resources: [{ name: 7 }, { kind: 'Workflow' }, ...ARGO], want: 'proven' },
];

for (const c of cases) {
  test(`owner settings: ${c.name}: ${c.want}`, () => {
    const v = judgeOwnerSettings({ ...WORKFLOWS, ...c.owner }, c.resources ?? ARGO);
    assert.equal(v.kind, c.want);
    if (c.says !== undefined) assert.match('detail' in v ? v.detail : '', c.says);
  });
}

test('owner settings: what each command refuses: a mismatch always, neither name served only at start', () => {
  const mismatch = judgeOwnerSettings({ ...WORKFLOWS, resource: 'cronworkflows' }, ARGO);
  const absent = judgeOwnerSettings({ ...WORKFLOWS, resource: 'flows', kind: 'Flow' }, ARGO);
  assert.match(refusalOf(WORKFLOWS, mismatch, true)?.message ?? '', /^the owner settings do not name a namespaced resource of kind Workflow \(--owner-group argoproj.io --owner-version v1alpha1 --owner-resource workflows --owner-kind Workflow\): /);
  assert.notEqual(refusalOf(WORKFLOWS, mismatch, false), null);
  assert.match(refusalOf(WORKFLOWS, absent, true)?.message ?? '', /sweep --owner-crd-deleted/);
  assert.equal(refusalOf(WORKFLOWS, absent, false), null, 'waited for later: Argo\'s CRDs may be going in one by one');
  assert.equal(refusalOf(WORKFLOWS, { kind: 'not-served', detail: '' }, true), null, 'the owner outage, waited out');
  assert.equal(refusalOf(WORKFLOWS, { kind: 'proven' }, true), null);
});

test('owner settings: discovery of the core group is /api/VERSION', () => {
  assert.equal(discoveryPath({ group: '', version: 'v1' }), '/api/v1');
  assert.equal(discoveryPath(WORKFLOWS), '/apis/argoproj.io/v1alpha1');
});

test('owner settings: a group/version answered 404 is not served; any other failure is thrown', async () => {
  const answering = (err: unknown) => ({ request: async () => Promise.reject(err) }) as never;
  assert.equal((await checkOwnerSettings(answering(new ApiError(404, 'NotFound', 'the server could not find the requested resource')), WORKFLOWS)).kind, 'not-served');
  await assert.rejects(checkOwnerSettings(answering(new ApiError(503, 'ServiceUnavailable', 'down')), WORKFLOWS), /down/);
  const paths: string[] = [];
  const served = { request: async (o: { path: string }) => (paths.push(o.path), { resources: ARGO }) } as never;
  assert.equal((await checkOwnerSettings(served, WORKFLOWS)).kind, 'proven');
  assert.deepEqual(paths, ['/apis/argoproj.io/v1alpha1']);
});
