// startControlPlane itself: a second, RBAC-enforcing control plane beside the shared one, and
// the clean-up promises (no programs left running, no temp dirs left behind).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Cluster } from '../../src/testbed/cluster.ts';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
import { ApiError } from '../../src/testbed/http.ts';

describe('a second control plane, with RBAC', () => {
  let plane: ControlPlane;
  before(async () => {
    plane = await startControlPlane({ authorization: 'RBAC', crds: [] });
  });
  after(() => plane.stop());

  test('refuses an unbound service account and serves the admin token', async (t) => {
    const admin = new Cluster(plane);
    t.after(() => admin.close());
    await admin.client.call('POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'nobody' } });
    const { status } = await admin.client.call<{ status: { token: string } }>(
      'POST', '/api/v1/namespaces/default/serviceaccounts/nobody/token', { spec: {} });
    const nobody = new Cluster({ ...plane, token: status.token });
    t.after(() => nobody.close());

    await assert.rejects(nobody.listPods('default'), (err) => err instanceof ApiError && err.status === 403);
    assert.deepEqual(await admin.listPods('default'), []);
  });

  test('stop ends every program of the control plane and removes its temp dir', async () => {
    await plane.stop();

    assert.deepEqual(plane.pids.filter(isRunning), []);
    assert.equal(existsSync(plane.dir), false);
  });
});

test('a control plane that fails half-way through start-up leaves no program running', async () => {
  const invalidCrd = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'bad' } };

  await assert.rejects(startControlPlane({ crds: [invalidCrd] }), /did not start[\s\S]*kube-apiserver/);

  assert.deepEqual(childPrograms(), []);
});

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function childPrograms(): string[] {
  const out = execFileSync('ps', ['-o', 'comm=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out.split('\n').filter((c) => /etcd|kube-/.test(c));
}
