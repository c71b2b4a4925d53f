import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KEYS } from './keys.ts';

// That every key's flag, variable and file key is documented is checked, with its command and
// default, against docs/configuration.md by reference.test.ts.
describe('KEYS', () => {
  test('derives the flag and the environment variable from the camelCase file key', () => {
    const spec = KEYS.find((k) => k.key === 'leaderElectionRenewDeadline');
    assert.deepEqual([spec?.flag, spec?.env],
      ['leader-election-renew-deadline', 'FINALIZER_SWEEPER_LEADER_ELECTION_RENEW_DEADLINE']);
  });
});
