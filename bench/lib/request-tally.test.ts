import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestTally, requestKind, type RequestKind } from './request-tally.ts';

test('requestKind: pod writes are told apart from other writes and from reads', () => {
  const cases: Array<[string, string, RequestKind]> = [
    ['PATCH', '/api/v1/namespaces/ns/pods/wf-task-1', 'pod write'],
    ['patch', '/api/v1/namespaces/ns/pods/wf-task-1?fieldManager=x', 'pod write'],
    ['DELETE', '/api/v1/namespaces/ns/pods/wf-task-1', 'pod write'],
    ['POST', '/api/v1/namespaces/ns/pods', 'pod write'],
    ['POST', '/api/v1/namespaces/ns/pods/p/binding', 'pod write'],
    ['GET', '/api/v1/namespaces/ns/pods?watch=1', 'read'],
    ['GET', '/api/v1/pods?labelSelector=a', 'read'],
    ['PUT', '/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/wf', 'other write'],
    ['POST', '/api/v1/namespaces/ns/events', 'other write'],
    ['PATCH', '/api/v1/namespaces/ns/podtemplates/x', 'other write'],
    ['PATCH', '/api/v1/namespaces/ns/podsets/x', 'other write'],
    ['DELETE', '/api/v1/namespaces/pods', 'other write'],
  ];
  for (const [method, url, want] of cases) assert.equal(requestKind(method, url), want, `${method} ${url}`);
});

test('RequestTally.since counts only what came after the copy', () => {
  const t = new RequestTally();
  t.add('GET', '/api/v1/pods');
  const before = { ...t.counts };
  t.add('PATCH', '/api/v1/namespaces/a/pods/p');
  t.add('PUT', '/apis/argoproj.io/v1alpha1/namespaces/a/workflows/w');
  assert.deepEqual(t.since(before), { 'pod write': 1, 'other write': 1, read: 0, total: 2 });
  assert.equal(t.total, 3);
});
