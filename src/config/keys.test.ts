import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { KEYS } from './keys.ts';

describe('KEYS', () => {
  test('derives the flag and the environment variable from the camelCase file key', () => {
    const spec = KEYS.find((k) => k.key === 'leaderElectionRenewDeadline');
    assert.deepEqual([spec?.flag, spec?.env],
      ['leader-election-renew-deadline', 'FINALIZER_SWEEPER_LEADER_ELECTION_RENEW_DEADLINE']);
  });

  test("every key's flag, variable and file key appear in the README's Configuration section", async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Configuration'));
    const missing = KEYS.flatMap((k) => [`\`--${k.flag}\``, `\`${k.env}\``, `\`${k.key}\``])
      .filter((name) => !section.includes(name));
    assert.deepEqual(missing, []);
  });
});
