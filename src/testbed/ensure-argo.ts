// ensure-argo: finds Argo's workflow-controller, kwok and Argo's CRDs in the cache folder,
// building them first if need be (see argo-binaries.ts), and prints where they are. CI runs it
// beside ensure-binaries so that the first build shows up as its own step.
import { ARGO_VERSION, findArgoBedBinaries, KWOK_VERSION } from './argo-binaries.ts';

const started = performance.now();
const bins = await findArgoBedBinaries();
const seconds = ((performance.now() - started) / 1000).toFixed(0);
console.log(`Argo ${ARGO_VERSION} and kwok ${KWOK_VERSION} (${seconds} s): ${bins.workflowController}, ${bins.kwok}, ${bins.crdDir}`);
