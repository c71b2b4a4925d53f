// SHA256SUMS is in the format sha256sum -c reads, and covers every other file of the folder.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { SUMS_FILE, sumsText, writeSums } from './checksums.ts';

test('sumsText: the hash, two spaces, the name; sorted by name', () => {
  assert.equal(sumsText([['b.tgz', 'bb'], ['a.oci.tar', 'aa']]), 'aa  a.oci.tar\nbb  b.tgz\n');
});

test('writeSums covers every other file, and sha256sum -c accepts it, then refuses a changed file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'release-sums-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'one.tgz'), 'one');
  await writeFile(join(dir, 'two.json'), '');
  await writeFile(join(dir, SUMS_FILE), 'stale');

  await writeSums(dir);

  const check = () => promisify(execFile)('sha256sum', ['-c', SUMS_FILE], { cwd: dir });
  assert.equal((await check()).stdout, 'one.tgz: OK\ntwo.json: OK\n');
  await writeFile(join(dir, 'one.tgz'), 'changed');
  await assert.rejects(check);
});
