import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { watchConfigFile } from './config-watch.ts';

const POLL_MS = 10;

/** mountLike lays out a directory as the kubelet mounts a ConfigMap: the file is a link through ..data. */
async function mountLike(dir: string, version: string, text: string): Promise<void> {
  await mkdir(join(dir, version));
  await writeFile(join(dir, version, 'finalizer-sweeper.yaml'), text);
  await symlink(version, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
}

test('a ConfigMap updated in place, as the kubelet swaps its ..data link, is seen once', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'config-watch-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await mountLike(dir, '..v1', 'forceAfter: 1h\n');
  await symlink(join('..data', 'finalizer-sweeper.yaml'), join(dir, 'finalizer-sweeper.yaml'));
  let changes = 0;
  const stop = watchConfigFile(join(dir, 'finalizer-sweeper.yaml'), 'forceAfter: 1h\n', () => changes++, POLL_MS);
  t.after(stop);

  await sleep(POLL_MS * 5);
  assert.equal(changes, 0, 'the same text is no change');
  await mountLike(dir, '..v2', 'forceAfter: 2h\n');
  for (let i = 0; i < 100 && changes === 0; i++) await sleep(POLL_MS);
  await sleep(POLL_MS * 5);

  assert.equal(changes, 1);
});

test('a file that cannot be read for a while is not a change; the text it comes back with decides', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'config-watch-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'finalizer-sweeper.yaml');
  let changes = 0;
  const stop = watchConfigFile(path, '{}\n', () => changes++, POLL_MS);
  t.after(stop);

  await sleep(POLL_MS * 5);
  await writeFile(path, '{}\n');
  await sleep(POLL_MS * 5);
  assert.equal(changes, 0);
  await writeFile(path, 'dryRun: true\n');
  for (let i = 0; i < 100 && changes === 0; i++) await sleep(POLL_MS);

  assert.equal(changes, 1);
});

test('each change is reported once, with its text, and a text that comes back after another is a change again', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'config-watch-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'finalizer-sweeper.yaml');
  await writeFile(path, '{}\n');
  const seen: string[] = [];
  const stop = watchConfigFile(path, '{}\n', (text) => seen.push(text), POLL_MS);
  t.after(stop);
  // Written whole, as the kubelet swaps a ConfigMap's files: writeFile alone can be read half-way, empty.
  const replace = async (text: string) => {
    await writeFile(`${path}.tmp`, text);
    await rename(`${path}.tmp`, path);
  };
  const until = async (n: number) => {
    for (let i = 0; i < 100 && seen.length < n; i++) await sleep(POLL_MS);
    await sleep(POLL_MS * 5);
  };

  await replace('forceAfter: soon\n');
  await until(1);
  await replace('forceAfter: 1h\n');
  await until(2);
  await replace('forceAfter: soon\n');
  await until(3);

  assert.deepEqual(seen, ['forceAfter: soon\n', 'forceAfter: 1h\n', 'forceAfter: soon\n']);
});

test('once stopped, nothing is reported', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'config-watch-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'finalizer-sweeper.yaml');
  await writeFile(path, '{}\n');
  let changes = 0;
  const stop = watchConfigFile(path, '{}\n', () => changes++, POLL_MS);

  stop();
  await writeFile(path, 'dryRun: true\n');
  await sleep(POLL_MS * 10);

  assert.equal(changes, 0);
});
