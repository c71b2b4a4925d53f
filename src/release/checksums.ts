// SHA256SUMS: one line per artifact, `<hex>  <name>`, the format `sha256sum -c` checks.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const SUMS_FILE = 'SHA256SUMS';

/** sha256 hashes a file without reading it whole into memory (an image archive is 100 MB). */
export async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** sumsText is the file's text for these (name, hex) pairs, sorted by name. */
export function sumsText(sums: ReadonlyArray<readonly [string, string]>): string {
  return [...sums].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, hex]) => `${hex}  ${name}\n`).join('');
}

/** writeSums writes SHA256SUMS over every other file of `dir`, and returns its path. */
export async function writeSums(dir: string): Promise<string> {
  const names = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile() && e.name !== SUMS_FILE).map((e) => e.name);
  const sums = await Promise.all(names.map(async (name) => [name, await sha256(join(dir, name))] as const));
  const file = join(dir, SUMS_FILE);
  await writeFile(file, sumsText(sums));
  return file;
}
