import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { FETCH_BLOCKED_PORTS, freePort } from './control-plane-files.ts';

test('freePort picks a bindable port below the ephemeral range, where outgoing connections never take it', async (t) => {
  let low: number;
  try {
    low = Number((await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/)[0]);
  } catch {
    return t.skip('no /proc/sys/net/ipv4/ip_local_port_range here');
  }
  const seen = new Set<number>();
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    assert.ok(port >= 10_000 && port < low, `port ${port} is not in [10000, ${low})`);
    assert.ok(!seen.has(port), `port ${port} handed out twice`);
    seen.add(port);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  }
});

test('the ports freePort skips are those Node\'s fetch refuses: a server there is unreachable to fetch', async () => {
  for (const port of FETCH_BLOCKED_PORTS) {
    await assert.rejects(fetch(`http://127.0.0.1:${port}/`), (err: Error & { cause?: Error }) => err.cause?.message === 'bad port');
  }
  assert.ok(FETCH_BLOCKED_PORTS.has(10080), '10080 (amanda) is on the Fetch standard\'s list and above 10,000');
});
