import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OwnerAvailability } from './owner-availability.ts';
import { recordingLogger } from '../log.ts';

const OWNER = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' };

test('an outage seen by reads ends with a list that works: nothing has to read an owner again to open the gate', () => {
  const { logger, records } = recordingLogger();
  const changes: boolean[] = [];
  const a = new OwnerAvailability({ owner: OWNER, logger, consequence: 'C', onChange: (served) => changes.push(served) });
  a.notServed('read', new Error('the server could not find the requested resource'));
  a.notServed('list', new Error('the server could not find the requested resource'));
  a.notServed('read', new Error('again'));
  assert.equal(a.served(), false);
  a.succeeded();
  assert.equal(a.served(), true);
  assert.deepEqual(changes, [false, true]);
  assert.deepEqual(records.map((r) => [r.level, r.msg.slice(0, 40)]), [
    ['error', 'owner resource workflows.argoproj.io/v1a'],
    ['info', 'recovered: the API server serves workflo'],
  ], 'one line for the outage, one for its end');
  a.succeeded();
  assert.equal(records.length, 2, 'nothing more while served');
});
