// The image's SBOM comes from syft (Anchore's, Apache-2.0, the generator most registries and
// scanners read), which catalogues an image from its filesystem: Debian packages from dpkg's
// status, the npm packages under node_modules from their package.json files, and binaries such as
// node by their contents. It is a Go program that no Debian package carries for bookworm, so it is
// built once from Go modules, like helm (8 minutes cold here on 2 busy cores, then cached), and
// reads the OCI archive itself: no daemon, no registry.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findGoTool } from '../testbed/go-tool.ts';

const exec = promisify(execFile);

/** SYFT_VERSION is served by the Go module proxy and builds with the Go of these machines. */
export const SYFT_VERSION = 'v1.57.1';

export function findSyft(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return findGoTool({ name: 'syft', pkg: 'github.com/anchore/syft/cmd/syft', version: SYFT_VERSION }, env);
}

/** imageSbom writes the CycloneDX JSON SBOM of the OCI archive `archive` to `file`. */
export async function imageSbom(syft: string, archive: string, file: string): Promise<void> {
  // No update check and no network: the catalogue is read from the archive alone.
  const env = { ...process.env, SYFT_CHECK_FOR_APP_UPDATE: 'false' };
  await exec(syft, ['scan', `oci-archive:${archive}`, '--output', `cyclonedx-json=${file}`, '--quiet'], { env, maxBuffer: 64 << 20 });
}
