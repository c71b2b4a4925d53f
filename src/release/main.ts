// `npm run release [-- --arch amd64,arm64] [--out DIR]`: builds a release's artifacts into
// release/<version>/ (git-ignored), from this checkout, publishing nothing (docs/releasing.md):
//   finalizer-sweeper-<v>.tgz                     the npm package (npm pack)
//   finalizer-sweeper-<v>.tgz.cdx.json            its SBOM (npm sbom, CycloneDX)
//   finalizer-sweeper-<v>-linux-<arch>.oci.tar    the image per arch, an OCI archive (podman save)
//   finalizer-sweeper-<v>-linux-<arch>.oci.tar.cdx.json   its SBOM (syft, CycloneDX)
//   finalizer-sweeper-<v>.oci.tar                 every arch built, one OCI archive with an index
//   RELEASE-NOTES.md                              the version's CHANGELOG.md entry
//   SHA256SUMS                                    of all of the above (sha256sum -c)
// The image is deploy/Dockerfile's default (distroless) stage built on the local stand-ins for its
// base images (src/testbed/images.ts), since no container registry is reachable here. An arch
// that cannot be built is said, with why, and the exit code is 1; the others are still produced.
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ARCHES, buildImage, ensureBaseImages, nodeVersionForImages, type Arch } from '../testbed/images.ts';
import { Podman } from '../testbed/podman.ts';
import { changelogEntry } from './changelog.ts';
import { writeSums } from './checksums.ts';
import { ensureEmulation } from './emulation.ts';
import { packageSbom, packTarball } from './package-artifacts.ts';
import { findSyft, imageSbom } from './syft.ts';

const REPO = join(import.meta.dirname, '..', '..');
const started = performance.now();
const log = (message: string): void => void process.stderr.write(`[release ${seconds(started)} s] ${message}\n`);

const { values } = parseArgs({ options: { arch: { type: 'string', default: ARCHES.join(',') }, out: { type: 'string' } } });
const arches = (values.arch ?? '').split(',').filter((a) => a !== '');
const unknown = arches.filter((a) => !(ARCHES as readonly string[]).includes(a));
if (unknown.length > 0 || arches.length === 0) {
  process.stderr.write(`release: --arch takes ${ARCHES.join(', ')} (comma-separated), not ${values.arch ?? ''}\n`);
  process.exit(2);
}

const { version } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
const notes = changelogEntry(await readFile(join(REPO, 'CHANGELOG.md'), 'utf8').catch(() => ''), version);
if (notes === null) {
  process.stderr.write(`release: CHANGELOG.md has no entry "## [${version}] - YYYY-MM-DD" for the version in package.json: write it first (docs/releasing.md)\n`);
  process.exit(2);
}
// The default folder is the script's own and made afresh; one given with --out must be new or empty.
const out = values.out ?? join(REPO, 'release', version);
if (values.out === undefined) await rm(out, { recursive: true, force: true });
else if ((await readdir(out).catch(() => [])).length > 0) {
  process.stderr.write(`release: --out ${out} is not empty: give a new or empty folder\n`);
  process.exit(2);
}
await mkdir(out, { recursive: true });
await writeFile(join(out, 'RELEASE-NOTES.md'), notes);

log('npm pack');
const tarball = await packTarball(out);
log('npm sbom');
await packageSbom(`${tarball}.cdx.json`);

const blocked: Array<[Arch, string]> = [];
const engine = await Podman.find();
if ('unavailable' in engine) {
  for (const arch of arches as Arch[]) blocked.push([arch, engine.unavailable]);
} else {
  const syft = findSyft();
  syft.catch(() => {}); // awaited below; built meanwhile on a cold cache
  // One Node for every arch of the release.
  const nodeVersion = await nodeVersionForImages(arches as Arch[]);
  log(`Node ${nodeVersion} in the image${arches.length > 1 ? 's' : ''}`);
  const built: string[] = [];
  for (const arch of arches as Arch[]) {
    try {
      const why = await ensureEmulation(arch);
      if (why !== null) throw new Error(why);
      log(`linux/${arch}: base images`);
      const bases = await ensureBaseImages(engine, arch, nodeVersion);
      log(`linux/${arch}: podman build --platform linux/${arch}`);
      const tag = await buildImage(engine, bases, 'distroless', `localhost/finalizer-sweeper:${version}-${arch}`);
      const archive = join(out, `finalizer-sweeper-${version}-linux-${arch}.oci.tar`);
      log(`linux/${arch}: podman save --format oci-archive`);
      await engine.saveOciArchive(tag, archive);
      log(`linux/${arch}: syft scan`);
      await imageSbom(await syft, archive, `${archive}.cdx.json`);
      built.push(tag);
    } catch (err) {
      blocked.push([arch, err instanceof Error ? err.message : String(err)]);
      log(`linux/${arch}: blocked: ${blocked.at(-1)?.[1] ?? ''}`);
    }
  }
  if (built.length > 1) {
    log('the multi-arch OCI archive');
    await engine.saveMultiArchArchive(`localhost/finalizer-sweeper:${version}`, built, join(out, `finalizer-sweeper-${version}.oci.tar`));
  }
}

const sums = await writeSums(out);
const listing = (await readFile(sums, 'utf8')).trim().split('\n').map((line) => line.split('  ')[1] ?? '');
for (const name of [...listing, 'SHA256SUMS']) process.stdout.write(`${((await stat(join(out, name))).size / 1e6).toFixed(1).padStart(8)} MB  ${join(out, name)}\n`);
for (const [arch, why] of blocked) process.stdout.write(`blocked: linux/${arch}: ${why}\n`);
log(blocked.length === 0 ? 'done' : `done, ${blocked.length} arch(es) blocked`);
process.exitCode = blocked.length === 0 ? 0 : 1;

function seconds(since: number): string {
  return ((performance.now() - since) / 1000).toFixed(0);
}
