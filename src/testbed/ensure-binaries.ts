// ensure-binaries: finds the control-plane binaries, building them first if need be (see
// binaries.ts), and prints where they are. CI runs it before the tests so that a slow first
// build shows up as its own step rather than inside the test runner's global setup.
import { findControlPlaneBinaries } from './binaries.ts';

const bins = await findControlPlaneBinaries();
console.log(`control plane ${bins.version}: ${bins.apiserver}, ${bins.controllerManager}, ${bins.etcd}`);
