// debian_mirror (apt-mirror.sh) against apt configurations of both formats. Host names here are
// made up (.invalid): the point is that the test bed takes whatever the machine is set up with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, 'apt-mirror.sh');

async function mirrorOf(files: Record<string, string>): Promise<{ uri: string | null; stderr: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'apt-'));
  try {
    await mkdir(join(dir, 'sources.list.d'));
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    const { stdout } = await run('bash', ['-c', `. "${SCRIPT}" && debian_mirror "$1" bookworm`, 'sh', dir]);
    return { uri: stdout.trim(), stderr: '' };
  } catch (err) {
    return { uri: null, stderr: (err as { stderr: string }).stderr };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const DEB822 = `Types: deb
# a comment
URIs: http://mirror.invalid/debian/
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.invalid/debian-security
Suites: bookworm-security
Components: main
`;

const cases: Array<[string, Record<string, string>, string | null]> = [
  ['deb822 .sources: the stanza with the suite and main, trailing slash dropped', { 'sources.list.d/debian.sources': DEB822 }, 'http://mirror.invalid/debian'],
  ['one-line sources.list, with options', { 'sources.list': '# deb http://old.invalid/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://proxy.invalid:3142/debian bookworm main non-free\n' }, 'http://proxy.invalid:3142/debian'],
  ['a .list in sources.list.d wins over .sources', { 'sources.list.d/a.list': 'deb http://list.invalid/debian bookworm main\n', 'sources.list.d/b.sources': DEB822 }, 'http://list.invalid/debian'],
  ['only -security and deb-src entries: none', { 'sources.list': 'deb http://x.invalid/debian-security bookworm-security main\ndeb-src http://x.invalid/debian bookworm main\n' }, null],
  ['a disabled file is not read', { 'sources.list.d/debian.sources.disabled': DEB822 }, null],
  ['a stanza without main: none', { 'sources.list.d/c.sources': 'Types: deb\nURIs: http://c.invalid/debian\nSuites: bookworm\nComponents: contrib\n' }, null],
];
for (const [what, files, want] of cases) {
  test(`debian_mirror: ${what}`, async () => {
    const got = await mirrorOf(files);
    assert.equal(got.uri, want);
    if (want === null) assert.match(got.stderr, /cannot tell which Debian mirror this machine uses/);
  });
}
