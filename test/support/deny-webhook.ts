// Admission webhooks on loopback, registered with the API server for pod UPDATEs in one namespace:
// a validating one that denies every request it is sent (the webhook that issue 30's users meet,
// which blocks every finalizer removal), a mutating one that adds a label no pod may carry,
// so that the API server's own validation answers every pod update 422 with the field (what a
// misbehaving injector, or a pod that no longer validates, leads to), and a mutating one that
// stamps a valid label and annotation on every update (what a policy engine or an injector does). Their serving certificate
// is self-signed for 127.0.0.1 (openssl) and handed to the API server as the caBundle.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Cluster } from '../../src/testbed/cluster.ts';

const run = promisify(execFile);
const APIS = {
  deny: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  invalidate: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
  stamp: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
} as const;
/** INVALID_LABEL is the label key the mutating webhook adds: a space is not allowed in one. */
export const INVALID_LABEL = 'not a valid key';
/** STAMPED_LABEL and STAMPED_ANNOTATION are what the stamping webhook sets, to "yes". */
export const STAMPED_LABEL = 'stamped-by-webhook';
export const STAMPED_ANNOTATION = 'example.com/stamped';

export interface DenyWebhook {
  /** configuration is the webhook configuration's name; webhook the name of its one webhook. */
  configuration: string;
  webhook: string;
  message: string;
  /** remove deletes the configuration, waits until the API server no longer calls it, and stops the server. */
  remove(): Promise<void>;
}

/**
 * denyPodUpdates serves the webhook and registers it for pod UPDATEs in `ns` (its rule's
 * resources: `pods` unless told); it returns once a dry-run update of `probePod` is denied, that
 * is, once the API server calls it.
 */
export function denyPodUpdates(cluster: Cluster, ns: string, probePod: string, resources: string[] = ['pods']): Promise<DenyWebhook> {
  return podUpdateWebhook(cluster, ns, probePod, resources, 'deny');
}

/** invalidatePodUpdates: the mutating webhook that adds INVALID_LABEL to every pod update in `ns`, registered once the API server calls it. */
export function invalidatePodUpdates(cluster: Cluster, ns: string, probePod: string): Promise<DenyWebhook> {
  return podUpdateWebhook(cluster, ns, probePod, ['pods'], 'invalidate');
}

/** stampPodUpdates: the mutating webhook that sets STAMPED_LABEL and STAMPED_ANNOTATION on every pod update in `ns`, registered once the API server calls it. */
export function stampPodUpdates(cluster: Cluster, ns: string, probePod: string): Promise<DenyWebhook> {
  return podUpdateWebhook(cluster, ns, probePod, ['pods'], 'stamp');
}

async function podUpdateWebhook(cluster: Cluster, ns: string, probePod: string, resources: string[], kind: keyof typeof APIS): Promise<DenyWebhook> {
  const API = APIS[kind];
  const dir = await mkdtemp(join(tmpdir(), 'deny-webhook-'));
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]);
  const [key, cert] = await Promise.all([readFile(join(dir, 'key.pem')), readFile(join(dir, 'cert.pem'))]);
  await rm(dir, { recursive: true, force: true });

  const message = 'pods in this namespace are frozen';
  const server = createServer({ key, cert }, (req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (s: string) => (body += s)).on('end', () => {
      const review = JSON.parse(body) as { request?: { uid?: string; object?: { metadata?: { labels?: object; annotations?: object } } } };
      const uid = review.request?.uid;
      const metadata = review.request?.object?.metadata;
      const addLabel = [
        ...(metadata?.labels === undefined ? [{ op: 'add', path: '/metadata/labels', value: {} }] : []),
        { op: 'add', path: `/metadata/labels/${INVALID_LABEL}`, value: 'x' },
      ];
      const stamp = [
        ...(metadata?.labels === undefined ? [{ op: 'add', path: '/metadata/labels', value: {} }] : []),
        ...(metadata?.annotations === undefined ? [{ op: 'add', path: '/metadata/annotations', value: {} }] : []),
        { op: 'add', path: `/metadata/labels/${STAMPED_LABEL}`, value: 'yes' },
        { op: 'add', path: `/metadata/annotations/${STAMPED_ANNOTATION.replace('/', '~1')}`, value: 'yes' },
      ];
      const patch = (ops: object[]) => ({ uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') });
      const response = kind === 'deny' ? { uid, allowed: false, status: { code: 403, message } } : patch(kind === 'stamp' ? stamp : addLabel);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const configuration = `${kind}-${ns}`;
  const webhook = `${kind}-pod-updates.example.com`;
  await cluster.client.call('POST', API, {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: kind === 'deny' ? 'ValidatingWebhookConfiguration' : 'MutatingWebhookConfiguration',
    metadata: { name: configuration },
    webhooks: [{
      name: webhook,
      clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle: cert.toString('base64') },
      rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources }],
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      sideEffects: 'None', admissionReviewVersions: ['v1'], failurePolicy: 'Fail', timeoutSeconds: 5,
      ...(kind === 'deny' ? {} : { reinvocationPolicy: 'Never' }),
    }],
  });
  // probe is true while the API server does not call the webhook: the dry run passes unchanged.
  const probe = () => cluster.client.call<{ metadata?: { labels?: Record<string, string> } }>('PATCH', `/api/v1/namespaces/${ns}/pods/${probePod}?dryRun=All`, { metadata: { labels: { probe: 'x' } } }, 'application/merge-patch+json')
    .then((pod) => kind !== 'stamp' || pod.metadata?.labels?.[STAMPED_LABEL] === undefined, () => false);
  await cluster.waitFor(async () => !(await probe()), 30_000, 'the webhook to be called');
  return {
    configuration, webhook, message,
    remove: async () => {
      await cluster.client.call('DELETE', `${API}/${configuration}`);
      // The namespace's cleanup patches its pods: only once the API server has let go of the webhook.
      await cluster.waitFor(probe, 30_000, 'the webhook to be dropped');
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
