// The test bed's identities: the admin is exempt from API Priority and Fairness, and each
// service-account context is classified by APF's `service-accounts` flow schema, as a real
// controller's service account is in a cluster.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Cluster } from '../../src/testbed/cluster.ts';
import { contextOf, SERVICE_ACCOUNTS } from '../../src/testbed/control-plane-files.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster: admin, kubeconfigPath } = useTestCluster();
const FLOW_SCHEMAS = '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas';

test('the admin is exempt from APF and every service-account context falls under the service-accounts flow schema', async (t) => {
  const schemaUid = async (name: string): Promise<string> =>
    (await admin.client.call<{ metadata: { uid: string } }>('GET', `${FLOW_SCHEMAS}/${name}`)).metadata.uid;
  const flowSchemaOf = async (c: Cluster): Promise<unknown> =>
    (await c.client.raw('GET', '/api/v1/namespaces/default/pods?limit=1')).headers['x-kubernetes-pf-flowschema-uid'];

  assert.equal(await flowSchemaOf(admin), await schemaUid('exempt'));
  for (const sa of SERVICE_ACCOUNTS) {
    const c = Cluster.fromKubeconfig(kubeconfigPath, contextOf(sa));
    t.after(() => c.close());
    assert.equal(await flowSchemaOf(c), await schemaUid('service-accounts'), contextOf(sa));
  }
});
