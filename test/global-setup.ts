// One control plane per `npm test` run (node --test --test-global-setup): test files reach it
// through FINALIZER_SWEEPER_TEST_KUBECONFIG, which the test processes inherit. A control plane
// that cannot start fails the run: integration tests are never skipped silently.
import { startControlPlane, type ControlPlane } from '../src/testbed/control-plane.ts';
import { KUBECONFIG_ENV } from './support/cluster.ts';

let plane: ControlPlane | undefined;

export async function globalSetup(): Promise<void> {
  const started = performance.now();
  plane = await startControlPlane();
  process.env[KUBECONFIG_ENV] = plane.kubeconfigPath;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`integration tests against kube-apiserver ${plane.serverVersion} at ${plane.server} (started in ${seconds} s)`);
}

export async function globalTeardown(): Promise<void> {
  await plane?.stop();
}
