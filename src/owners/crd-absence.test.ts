import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../kube/errors.ts';
import type { RequestOptions } from '../kube/client.ts';
import { confirmOwnerUninstalled, crdNameOf, type Requester } from './crd-absence.ts';

const OWNER = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** notFound is the API server's 404 for a missing object: its details name it. */
const notFound = (name: string, kind = 'customresourcedefinitions', group = 'apiextensions.k8s.io') => ({ status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound', message: `${kind}.${group} "${name}" not found`, details: { name, group, kind } } });
/** notServed is a 404 that names nothing: "the server could not find the requested resource". */
const notServed = { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound', message: 'the server could not find the requested resource', details: {} } };
const forbidden = { status: 403, body: { kind: 'Status', code: 403, reason: 'Forbidden', message: 'customresourcedefinitions.apiextensions.k8s.io is forbidden' } };

type Answer = { status: number; body: unknown };

/** scripted answers each path from the table (200 with the body when it is not an Answer), and records the paths asked. */
function scripted(table: Record<string, Answer | object>): Requester & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    request: async <T>(o: RequestOptions): Promise<T> => {
      asked.push(o.path);
      const a = table[o.path];
      if (a === undefined) throw ApiError.fromStatus(notServed.body, 404, null, o.subject);
      if ('status' in a && typeof a.status === 'number') throw ApiError.fromStatus((a as Answer).body, a.status, null, o.subject);
      return a as T;
    },
  };
}

/** gone is the cluster after Argo's uninstall: no Workflow CRD, Argo CD's applications still in argoproj.io. */
const gone = (over: Record<string, Answer | object> = {}) => ({
  [`${CRDS}/workflows.argoproj.io`]: notFound('workflows.argoproj.io'),
  [CRDS]: { items: [{ metadata: { name: 'applications.argoproj.io' }, spec: { group: 'argoproj.io', names: { kind: 'Application', plural: 'applications' } } }] },
  '/apis/argoproj.io': { versions: [{ version: 'v1alpha1' }] },
  '/apis/argoproj.io/v1alpha1': { resources: [{ name: 'applications', kind: 'Application' }, { name: 'applications/status', kind: 'Application' }] },
  ...over,
});

test('crdNameOf is plural.group', () => {
  assert.equal(crdNameOf(OWNER), 'workflows.argoproj.io');
});

test('uninstalled: the CRD answers 404 naming it, no CRD defines the kind, discovery lists neither name nor kind', async () => {
  const c = scripted(gone());
  const r = await confirmOwnerUninstalled(c, OWNER);
  assert.equal(r.state, 'uninstalled', r.detail);
  assert.match(r.detail, /every Workflow went with the CRD/);
  assert.deepEqual(c.asked, [`${CRDS}/workflows.argoproj.io`, CRDS, '/apis/argoproj.io', '/apis/argoproj.io/v1alpha1']);
});

test('uninstalled: a group the server no longer knows at all answers 404', async () => {
  const c = scripted(gone({ '/apis/argoproj.io': notServed, [CRDS]: { items: [] } }));
  assert.equal((await confirmOwnerUninstalled(c, OWNER)).state, 'uninstalled');
});

const refusals: Array<{ name: string; table: Record<string, Answer | object>; owner?: typeof OWNER; state: string; detail: RegExp }> = [
  { name: 'the CRD exists', table: gone({ [`${CRDS}/workflows.argoproj.io`]: { metadata: { name: 'workflows.argoproj.io' } } }), state: 'installed', detail: /the CRD workflows\.argoproj\.io exists: owners are not gone; run sweep without --owner-crd-deleted/ },
  { name: 'the CRD is being deleted', table: gone({ [`${CRDS}/workflows.argoproj.io`]: { metadata: { name: 'workflows.argoproj.io', deletionTimestamp: '2026-11-26T00:00:00Z' } } }), state: 'installed', detail: /being deleted/ },
  { name: 'a 404 on the CRD that names no object (apiextensions not served, a gateway)', table: gone({ [`${CRDS}/workflows.argoproj.io`]: notServed }), state: 'unknown', detail: /cannot confirm.*HTTP 404/ },
  { name: 'a 404 naming another object', table: gone({ [`${CRDS}/workflows.argoproj.io`]: notFound('other.argoproj.io') }), state: 'unknown', detail: /cannot confirm/ },
  { name: 'the CRD read is forbidden', table: gone({ [`${CRDS}/workflows.argoproj.io`]: forbidden }), state: 'unknown', detail: /forbidden \(403\): grant get and list on customresourcedefinitions/ },
  { name: 'the CRD list is forbidden', table: gone({ [CRDS]: forbidden }), state: 'unknown', detail: /list customresourcedefinitions is forbidden/ },
  {
    name: 'a misspelt resource: the singular names no CRD, but the CRD of its kind exists (all versions unserved)',
    owner: { ...OWNER, resource: 'workflow' },
    table: gone({
      [`${CRDS}/workflow.argoproj.io`]: notFound('workflow.argoproj.io'),
      [CRDS]: { items: [{ metadata: { name: 'workflows.argoproj.io' }, spec: { group: 'argoproj.io', names: { kind: 'Workflow', plural: 'workflows' } } }] },
    }),
    state: 'installed',
    detail: /the CRD workflows\.argoproj\.io defines Workflow in argoproj\.io as workflows: --owner-resource workflow names something else/,
  },
  {
    name: 'the kind is served by an aggregated API (no CRD)',
    table: gone({ '/apis/argoproj.io/v1alpha1': { resources: [{ name: 'workflows', kind: 'Workflow' }] } }),
    state: 'installed',
    detail: /serves workflows\.argoproj\.io\/v1alpha1 \(kind Workflow\)/,
  },
  {
    name: 'a misspelt resource whose kind discovery still lists in another version',
    owner: { ...OWNER, resource: 'workflow' },
    table: gone({
      [`${CRDS}/workflow.argoproj.io`]: notFound('workflow.argoproj.io'),
      '/apis/argoproj.io': { versions: [{ version: 'v1alpha1' }, { version: 'v1' }] },
      '/apis/argoproj.io/v1': { resources: [{ name: 'workflows', kind: 'Workflow' }, { name: 'workflows/status', kind: 'Workflow' }] },
    }),
    state: 'installed',
    detail: /serves workflows\.argoproj\.io\/v1/,
  },
  { name: 'discovery fails', table: gone({ '/apis/argoproj.io': { status: 503, body: { message: 'etcd' } } }), state: 'unknown', detail: /discovery\) failed \(HTTP 503: etcd\)/ },
  { name: 'the core group', owner: { ...OWNER, group: '' }, table: {}, state: 'unknown', detail: /core API group/ },
];

for (const r of refusals) {
  test(`not uninstalled: ${r.name}`, async () => {
    const got = await confirmOwnerUninstalled(scripted(r.table), r.owner ?? OWNER);
    assert.equal(got.state, r.state, got.detail);
    assert.match(got.detail, r.detail);
  });
}

test('the CRD list is read page by page, and a match on a later page counts', async () => {
  const pages: RequestOptions[] = [];
  const base = scripted(gone());
  const c: Requester = {
    request: async <T>(o: RequestOptions): Promise<T> => {
      if (o.path !== CRDS) return base.request<T>(o);
      pages.push(o);
      if (o.query?.['continue'] === undefined) return { items: [], metadata: { continue: 'p2' } } as T;
      return { items: [{ metadata: { name: 'flows.argoproj.io' }, spec: { group: 'argoproj.io', names: { kind: 'Workflow', plural: 'flows' } } }] } as T;
    },
  };
  const r = await confirmOwnerUninstalled(c, OWNER);
  assert.equal(r.state, 'installed');
  assert.deepEqual(pages.map((p) => p.query?.['continue']), [undefined, 'p2']);
});
