// A loopback proxy in front of the test API server that drops API Priority and Fairness's
// response headers (X-Kubernetes-PF-*): to a client, an API server that runs no APF, or one
// behind a gateway that strips them. Plain HTTP towards the client, TLS towards the server;
// bodies are piped as they come, so watches stream through it.
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:http';
import { Agent, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';

export interface ApfStrippingProxy {
  /** kubeconfigPath reaches the server through the proxy, as the identity the proxy was started for. */
  kubeconfigPath: string;
  close(): Promise<void>;
}

/**
 * startApfStrippingProxy proxies to the server of `kubeconfigPath`'s `context`, and writes a
 * kubeconfig (at `path`) that reaches it through the proxy with that context's token.
 */
export async function startApfStrippingProxy(o: { kubeconfigPath: string; context: string; path: string }): Promise<ApfStrippingProxy> {
  const kc = new KubeConfig();
  kc.loadFromFile(o.kubeconfigPath);
  kc.setCurrentContext(o.context);
  const cluster = kc.getCurrentCluster();
  const token = kc.getCurrentUser()?.token;
  if (!cluster?.caData || !token) throw new Error(`${o.kubeconfigPath}: context ${o.context} needs certificate-authority-data and a token`);
  const target = new URL(cluster.server);
  const agent = new Agent({ keepAlive: true, ca: Buffer.from(cluster.caData, 'base64').toString('utf8') });

  const server = createServer((req, res) => {
    const upstream = request(
      { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host }, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, withoutApf(answer.headers));
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  await writeFile(
    o.path,
    `apiVersion: v1
kind: Config
clusters:
- name: stripped
  cluster:
    server: http://127.0.0.1:${port}
users:
- name: stripped
  user:
    token: ${token}
contexts:
- name: stripped
  context:
    cluster: stripped
    user: stripped
current-context: stripped
`,
    { mode: 0o600 },
  );
  return {
    kubeconfigPath: o.path,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
    },
  };
}

function withoutApf(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !name.startsWith('x-kubernetes-pf-')));
}
