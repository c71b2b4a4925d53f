// ensure-helm: finds the helm the deploy tests render Argo's chart with, building it first if need
// be (see helm.ts), and prints where it is. CI runs it beside ensure-argo so that the first build
// shows up as its own step.
import { findHelm, HELM_VERSION } from './helm.ts';

const started = performance.now();
const helm = await findHelm();
console.log(`helm ${HELM_VERSION} (${((performance.now() - started) / 1000).toFixed(0)} s): ${helm}`);
