// The npm package's release artifacts: the tarball `npm pack` makes (its prepack script builds
// dist/), and its SBOM from `npm sbom`, npm's own generator (npm 10.1 and later, so it comes with
// Node and adds no dependency), read from package-lock.json alone: the production dependencies at
// the versions the lockfile pins, with their SHA-512 integrity and licenses, in CycloneDX 1.5.
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');

/** packTarball runs `npm pack` of the repository into `dir` and returns the tarball's path. */
export async function packTarball(dir: string, env: NodeJS.ProcessEnv = withoutNpmVariables(process.env)): Promise<string> {
  const before = new Set(await readdir(dir));
  await exec('npm', ['pack', '--pack-destination', dir], { cwd: REPO, env, maxBuffer: 16 << 20 });
  const packed = (await readdir(dir)).filter((f) => f.endsWith('.tgz') && !before.has(f));
  if (packed.length !== 1) throw new Error(`npm pack should write one tarball, wrote ${packed.join(', ') || 'none'}`);
  return join(dir, packed[0] ?? '');
}

/** CycloneDx is the part of a CycloneDX document the release reads and fixes. */
export interface CycloneDx {
  bomFormat: string;
  specVersion: string;
  metadata: { component: { name: string; version: string; purl?: string } };
  components: Array<{ name: string; version: string; purl?: string; hashes?: Array<{ alg: string; content: string }> }>;
}

/** packageSbom writes the package's CycloneDX SBOM to `file`. */
export async function packageSbom(file: string, env: NodeJS.ProcessEnv = withoutNpmVariables(process.env)): Promise<CycloneDx> {
  const { stdout } = await exec('npm', ['sbom', '--omit', 'dev', '--package-lock-only', '--sbom-format', 'cyclonedx', '--sbom-type', 'application'], { cwd: REPO, env, maxBuffer: 64 << 20 });
  const sbom = withPackageName(JSON.parse(stdout) as CycloneDx, JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { name: string });
  await writeFile(file, `${JSON.stringify(sbom, null, 2)}\n`);
  return sbom;
}

/**
 * withPackageName names the SBOM's subject as package.json does: npm sbom 11 names the root by
 * its folder (a checkout in `main/` came out as "main"), while its purl and bom-ref are right.
 */
export function withPackageName(sbom: CycloneDx, pkg: { name: string }): CycloneDx {
  return { ...sbom, metadata: { ...sbom.metadata, component: { ...sbom.metadata.component, name: pkg.name } } };
}

/** withoutNpmVariables drops the npm_* variables that `npm run` passes its scripts, which a nested npm would read as settings. */
export function withoutNpmVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
}
