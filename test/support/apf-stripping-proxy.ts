// A loopback proxy in front of the test API server that drops API Priority and Fairness's
// response headers (X-Kubernetes-PF-*): to a client, an API server that runs no APF, or one
// behind a gateway that strips them.
import type { IncomingHttpHeaders } from 'node:http';
import { startFaultProxy, type FaultProxy } from '../../src/testbed/fault-proxy.ts';

export type ApfStrippingProxy = FaultProxy;

/**
 * startApfStrippingProxy proxies to the server of `kubeconfigPath`'s `context`, and writes a
 * kubeconfig (at `path`) that reaches it through the proxy with that context's token.
 */
export function startApfStrippingProxy(o: { kubeconfigPath: string; context: string; path: string }): Promise<ApfStrippingProxy> {
  return startFaultProxy({ ...o, headers: withoutApf });
}

function withoutApf(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !name.startsWith('x-kubernetes-pf-')));
}
