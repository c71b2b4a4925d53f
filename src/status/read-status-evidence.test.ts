import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metricsPort } from './read-status-evidence.ts';

test('metricsPort is the port of --metrics-bind-address, or null when the endpoint is disabled', () => {
  const cases: [string | null, number | null][] = [[':8080', 8080], ['0.0.0.0:9100', 9100], ['[::]:8080', 8080], ['0', null], ['', null], [null, null]];
  for (const [address, want] of cases) assert.equal(metricsPort(address === null ? null : { metricsBindAddress: address }), want, String(address));
});
