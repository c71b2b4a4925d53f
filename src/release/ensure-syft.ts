// ensure-syft: finds the syft that makes the image's SBOM, building it first if need be (see
// syft.ts), and prints where it is. CI runs it beside the tests, before the image test needs it.
import { findSyft, SYFT_VERSION } from './syft.ts';

const started = performance.now();
const syft = await findSyft();
console.log(`syft ${SYFT_VERSION} (${((performance.now() - started) / 1000).toFixed(0)} s): ${syft}`);
