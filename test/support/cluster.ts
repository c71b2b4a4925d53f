// Helpers for integration tests: the shared control plane (started by test/global-setup.ts) and
// a fresh namespace per test, so that tests never see each other's objects.
import { randomBytes } from 'node:crypto';
import { after, type TestContext } from 'node:test';
import { Cluster } from '../../src/testbed/cluster.ts';

/** KUBECONFIG_ENV names the kubeconfig of the control plane that test/global-setup.ts started. */
export const KUBECONFIG_ENV = 'FINALIZER_SWEEPER_TEST_KUBECONFIG';

export interface TestCluster {
  cluster: Cluster;
  /** kubeconfigPath is for code under test that connects on its own. */
  kubeconfigPath: string;
  /** newNamespace creates a uniquely named namespace and deletes it when the test ends. */
  newNamespace(t: TestContext): Promise<string>;
}

/** useTestCluster connects to the shared control plane; call it once at the top of a test file. */
export function useTestCluster(): TestCluster {
  const kubeconfigPath = process.env[KUBECONFIG_ENV];
  if (!kubeconfigPath) {
    throw new Error(
      `${KUBECONFIG_ENV} is not set: run integration tests with npm test, npm run test:integration, ` +
        'or node --test --test-global-setup=test/global-setup.ts FILE',
    );
  }
  const cluster = Cluster.fromKubeconfig(kubeconfigPath);
  after(() => cluster.close());
  const newNamespace = async (t: TestContext): Promise<string> => {
    const slug = t.name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40);
    const name = `${slug || 'test'}-${randomBytes(3).toString('hex')}`.replace(/^-/, '');
    await cluster.createNamespace(name);
    t.after(() => cluster.deleteNamespace(name));
    return name;
  };
  return { cluster, kubeconfigPath, newNamespace };
}
