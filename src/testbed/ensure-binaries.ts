// ensure-binaries [VERSION...|--all]: finds the control-plane binaries of each version (default:
// the one KUBE_VERSION_ENV picks, else the newest; --all: every KUBE_VERSIONS entry), building
// them first if need be (see binaries.ts), and prints where they are. CI runs it before the tests
// so that a slow first build shows up as its own step rather than inside the test runner's setup.
import { findControlPlaneBinaries, KUBE_VERSION_ENV, KUBE_VERSIONS, kubeVersion } from './binaries.ts';

const args = process.argv.slice(2);
const versions = args.includes('--all') ? [...KUBE_VERSIONS] : args.length > 0 ? args.map((a) => kubeVersion({ [KUBE_VERSION_ENV]: a })) : [kubeVersion()];
for (const version of versions) {
  const started = performance.now();
  const bins = await findControlPlaneBinaries(version);
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  console.log(`control plane ${bins.version} (${seconds} s): ${bins.apiserver}, ${bins.controllerManager}, ${bins.etcd}`);
}
