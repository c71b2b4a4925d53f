// The test bed's fault proxy must behave as a real gateway does when the connection behind it
// breaks: the answer it is passing on ends too. Otherwise a watch through it hangs, silent, until
// the reflector's own watchdog gives up minutes later, and every test or benchmark that cuts the
// network behind the proxy (the soak's blackout) measures the proxy instead of the controller.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { startFaultProxy } from '../../src/testbed/fault-proxy.ts';
import { useTestCluster } from '../support/cluster.ts';

const { kubeconfigPath, newNamespace } = useTestCluster();
const CONTEXT = 'finalizer-sweeper-test';

/** tcpPipe forwards loopback connections to the API server; cut() breaks every one of them. */
async function tcpPipe(server: URL) {
  const sockets = new Set<Socket>();
  const pipe = createServer((client) => {
    const api = createConnection({ host: server.hostname, port: Number(server.port) });
    for (const s of [client, api]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => (client.destroy(), api.destroy()));
    }
    client.pipe(api).pipe(client);
  });
  await new Promise<void>((resolve) => pipe.listen(0, '127.0.0.1', resolve));
  return {
    port: (pipe.address() as AddressInfo).port,
    cut: () => sockets.forEach((s) => s.destroy()),
    close: () => new Promise((resolve) => (sockets.forEach((s) => s.destroy()), pipe.close(resolve))),
  };
}

test('a watch through the fault proxy ends when the connection behind the proxy breaks', async (t) => {
  const ns = await newNamespace(t);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  kc.setCurrentContext(CONTEXT);
  const server = new URL(kc.getCurrentCluster()!.server);
  const pipe = await tcpPipe(server);
  t.after(() => pipe.close());
  const piped = join(tmpdir(), `fault-proxy-${randomBytes(3).toString('hex')}.kubeconfig`);
  await writeFile(piped, (await readFile(kubeconfigPath, 'utf8')).replaceAll(server.origin, `https://127.0.0.1:${pipe.port}`), { mode: 0o600 });
  t.after(() => rm(piped, { force: true }));
  const proxy = await startFaultProxy({ kubeconfigPath: piped, context: CONTEXT, path: `${piped}.proxied` });
  t.after(() => (proxy.close(), rm(`${piped}.proxied`, { force: true })));

  const answer = await fetch(`${proxy.url}/api/v1/namespaces/${ns}/pods?watch=1&timeoutSeconds=60`, { headers: { authorization: `Bearer ${kc.getCurrentUser()!.token}` } });
  assert.equal(answer.status, 200);
  const ended = (async () => {
    try {
      for await (const chunk of answer.body!) void chunk;
      return 'ended';
    } catch {
      return 'failed';
    }
  })();
  pipe.cut();
  const outcome = await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 10_000, 'still open 10 s after the cut')).then((s) => s)]);
  assert.notEqual(outcome, 'still open 10 s after the cut');
});
