import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as https from 'node:https';
import { oneServerAgent } from './one-server-agent.ts';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB' + 'A'.repeat(1200) + '\n-----END CERTIFICATE-----\n';

test('oneServerAgent names a pool as Node does, and makes that name once per host and port', () => {
  const tls = { keepAlive: true, ca: Buffer.from(CA), rejectUnauthorized: true };
  const ours = oneServerAgent(true, tls);
  const node = new https.Agent(tls);
  const nodeGetName = https.Agent.prototype.getName;
  let made = 0;
  https.Agent.prototype.getName = function (this: https.Agent, o?: https.RequestOptions) {
    made++;
    return nodeGetName.call(this, o);
  };
  try {
    const a = { host: '127.0.0.1', port: 6443, ...tls };
    const first = ours.getName(a);
    assert.equal(first, node.getName(a));
    assert.ok(first.length > 1000, 'the CA is in the name');
    // The same host and port: the name made before, not made again.
    made = 0;
    assert.equal(ours.getName({ ...a }), first);
    assert.equal(made, 0);
    // Another host or port is named afresh, as Node would, and does not replace the first.
    const b = { ...a, port: 6444 };
    assert.equal(ours.getName(b), node.getName(b));
    assert.notEqual(ours.getName(b), first);
    assert.equal(ours.getName(a), first);
  } finally {
    https.Agent.prototype.getName = nodeGetName;
    ours.destroy();
    node.destroy();
  }
});

test('oneServerAgent without TLS is a plain HTTP agent named as Node names it', () => {
  const ours = oneServerAgent(false, { keepAlive: true });
  try {
    assert.equal(ours instanceof https.Agent, false);
    assert.equal(ours.getName({ host: 'localhost', port: 8080 }), 'localhost:8080:');
  } finally {
    ours.destroy();
  }
});
