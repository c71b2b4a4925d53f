// The layout shows the architecture only while imports run down the layers: API access below the
// cache, the cache below the decision, the decision below the workers, and `commands/` above
// everything as wiring. A module that imports upwards makes its layer depend on the ones it serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = dirname(new URL(import.meta.url).pathname);

/** LAYERS, lowest first; a module may import from its own layer and the ones below it. */
const LAYERS: readonly (readonly string[])[] = [
  ['abort.ts', 'version.ts', 'node-support.ts', 'log.ts', 'log', 'config', 'queue'],
  ['kube'],
  ['argo'],
  ['cache', 'namespaces', 'decide', 'leader'],
  ['owners'],
  ['work', 'metrics'],
  ['events'],
  ['controller'],
  ['explain'],
  ['status'],
  ['commands'],
  ['cli.ts', 'command-line.ts'],
];
/** The test bed, the demo and the release script stand beside the product: the product never imports them. */
const BESIDE = new Set(['testbed', 'demo', 'release']);

function layerOf(top: string): number | undefined {
  const i = LAYERS.findIndex((names) => names.includes(top));
  return i < 0 ? undefined : i;
}

/** topOf names a file's first path element under src/. */
const topOf = (file: string): string => relative(SRC, file).split('/')[0] ?? '';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

test('every module of src/ imports only from its own layer or the layers below it', () => {
  const wrong: string[] = [];
  for (const file of sources(SRC)) {
    const from = topOf(file);
    if (BESIDE.has(from)) continue;
    const fromLayer = layerOf(from);
    if (fromLayer === undefined) {
      wrong.push(`${relative(SRC, file)}: src/${from} has no layer in LAYERS`);
      continue;
    }
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\b[^;]*?from '(\.{1,2}\/[^']+)'/gms)) {
      const to = topOf(resolve(dirname(file), spec ?? ''));
      if (BESIDE.has(to)) wrong.push(`${relative(SRC, file)} imports ${spec}: the product never imports src/${to}`);
      const toLayer = layerOf(to);
      if (toLayer !== undefined && toLayer > fromLayer) wrong.push(`${relative(SRC, file)} imports ${spec}, a layer above it`);
    }
  }
  assert.deepEqual(wrong, []);
});
