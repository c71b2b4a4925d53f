// ensure-images: finds podman (installing it as root on Debian), builds the local base images if
// they are missing or stale (see images.ts), and prints them. CI runs it before the tests so that
// a slow first build shows up as its own step rather than inside the image test.
import { ensureBaseImages } from './images.ts';
import { Podman } from './podman.ts';

const podman = await Podman.find();
if ('unavailable' in podman) throw new Error(`no container engine: ${podman.unavailable}`);
const bases = await ensureBaseImages(podman);
console.log(`base images for Node ${bases.nodeVersion}: ${bases.slim}, ${bases.distroless}`);
