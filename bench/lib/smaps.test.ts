import assert from 'node:assert/strict';
import test from 'node:test';
import { classify, parseSmaps } from './smaps.ts';

/** mapping: one smaps entry, its range in MiB. */
function mapping(fromMiB: number, toMiB: number, perms: string, path: string, rssKiB: number): string {
  const hex = (mib: number) => (mib * 1024 * 1024).toString(16).padStart(12, '0');
  return `${hex(fromMiB)}-${hex(toMiB)} ${perms} 00000000 00:00 0          ${path}\nSize: ${(toMiB - fromMiB) * 1024} kB\nRss:            ${rssKiB} kB\nPss: 1 kB\n`;
}

test('classify: files, the brk heap, thread arenas (64 MiB with their PROT_NONE rest) and the other anonymous memory', () => {
  const smaps = [
    mapping(1, 2, 'r-xp', '/usr/bin/node', 900),
    mapping(3, 4, 'rw-p', '[heap]', 700),
    mapping(128, 130, 'rw-p', '', 2000), // an arena: 2 MiB in use of 64
    mapping(130, 192, '---p', '', 0),
    mapping(192, 256, 'rw-p', '', 60000), // an arena grown to its whole 64 MiB
    mapping(320, 321, 'rw-p', '', 500), // on a 64 MiB boundary, but not followed by the rest of one: V8's or malloc's
    mapping(321, 400, '---p', '', 0),
    mapping(500, 501, 'rw-p', '', 300),
    mapping(512, 513, 'rw-p', '', 50), // on a boundary, alone and short of 64 MiB
    mapping(600, 601, 'rw-p', '[stack]', 100),
  ].join('');
  assert.deepEqual(classify(parseSmaps(smaps)), {
    files: 900 * 1024,
    brkHeap: 700 * 1024,
    threadArenas: 62000 * 1024,
    arenaCount: 2,
    otherAnonymous: (500 + 300 + 50 + 100) * 1024,
  });
});
