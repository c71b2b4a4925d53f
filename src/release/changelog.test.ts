// The release's notes are its version's CHANGELOG.md entry; a version without one is refused.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { changelogEntry } from './changelog.ts';

const CHANGELOG = `# Changelog

## [Unreleased]

### Added
- next

## [1.2.0] - 2027-01-02

### Changed
- one

## [1.10.0-rc.1] - 2027-03-04

[Unreleased]: https://example.com/compare/v1.2.0...HEAD
[1.2.0]: https://example.com/v1.2.0
`;

test('the entry runs from its heading to the next version\'s, without the link references', () => {
  assert.equal(changelogEntry(CHANGELOG, '1.2.0'), '## [1.2.0] - 2027-01-02\n\n### Changed\n- one\n');
  assert.equal(changelogEntry(CHANGELOG, '1.10.0-rc.1'), '## [1.10.0-rc.1] - 2027-03-04\n');
});

test('a version without an entry has none: not a prefix, not a pattern', () => {
  assert.equal(changelogEntry(CHANGELOG, '1.2'), null);
  assert.equal(changelogEntry(CHANGELOG, '1.2.0.1'), null);
  assert.equal(changelogEntry(CHANGELOG, '1x2x0'), null);
});

test('CHANGELOG.md has an entry for the version in package.json', async () => {
  const repo = join(import.meta.dirname, '..', '..');
  const { version } = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as { version: string };
  const entry = changelogEntry(await readFile(join(repo, 'CHANGELOG.md'), 'utf8'), version);
  assert.match(entry ?? '', new RegExp(`^## \\[${version.replaceAll('.', '\\.')}\\] - \\d{4}-\\d\\d-\\d\\d\\n`));
});
