// The guardrail (deploy/components/guardrail) put in force and lifted on a benchmark's control
// plane: its objects read from the component's own files (rendered without a `namespace:`,
// kustomize leaves them as written: test/integration/guardrail.test.ts checks that rendering),
// and each change waited out with a probe, since the API server loads policies, bindings and
// their parameters asynchronously.
//
// Lifting it deletes the binding alone: the policy and its ConfigMap stay, as in a cluster where
// they are created once. Deleting and re-creating the ConfigMap between runs left the API
// server's cache without it well after the probe passed on a loaded machine, and 1.37 then reads
// it directly with a one-second timeout and refuses the request when that read times out
// ("failed to configure binding: ... context deadline exceeded", seen at a load average of 20).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { ApiError } from '../../src/testbed/http.ts';
import type { Cluster } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, newPod } from '../../src/testbed/fixtures.ts';
import { createNamespace } from './populate.ts';

const COMPONENT = new URL('../../deploy/components/guardrail/', import.meta.url);
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const MERGE = 'application/merge-patch+json';
const PROBE = 'guardrail-probe';

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
}

/** Guardrail switches the policy on and off; `prober` must be an account outside its lists (a tenant). */
export class Guardrail {
  readonly #admin: Cluster;
  readonly #prober: Cluster;
  readonly #namespace: string;

  /** namespace holds the probe pod; it must exist. */
  constructor(admin: Cluster, prober: Cluster, namespace: string) {
    this.#admin = admin;
    this.#prober = prober;
    this.#namespace = namespace;
  }

  /** on creates what is missing of the policy, its parameters and its binding, and resolves once the API server enforces them. */
  async on(): Promise<void> {
    for (const m of await manifests()) {
      if (m.metadata.namespace !== undefined) await createNamespace(this.#admin, m.metadata.namespace);
      await this.#admin.client.call('POST', collection(m), m).catch((err: unknown) => {
        if (!(err instanceof ApiError && err.status === 409)) throw err;
      });
    }
    await this.#until(true);
  }

  /** off deletes the binding, and resolves once the API server no longer enforces the policy. */
  async off(): Promise<void> {
    for (const m of await manifests()) {
      if (m.kind === 'ValidatingAdmissionPolicyBinding') await this.#admin.client.call('DELETE', `${collection(m)}/${m.metadata.name}`);
    }
    await this.#until(false);
  }

  /**
   * #until probes with a dry run (nothing written) of a removal by the prober: refused by the
   * policy, with the message that reads its ConfigMap, once it is in force; accepted once lifted.
   */
  async #until(enforced: boolean): Promise<void> {
    if ((await this.#admin.getPod(this.#namespace, PROBE)) === null) {
      await this.#admin.createPod(newPod({ namespace: this.#namespace, name: PROBE, finalizers: [ARGO_FINALIZER] }));
    }
    const path = `/api/v1/namespaces/${this.#namespace}/pods/${PROBE}?dryRun=All`;
    const refused = (): Promise<boolean> =>
      this.#prober.client.call('PATCH', path, { metadata: { finalizers: null } }, MERGE).then(
        () => false,
        (err: unknown) => err instanceof ApiError && err.status === 403 && err.message.includes("ValidatingAdmissionPolicy 'finalizer-sweeper-guardrail'") && err.message.includes('ConfigMap'),
      );
    await this.#admin.waitFor(async () => (await refused()) === enforced, 60_000, enforced ? 'the guardrail to be enforced' : 'the guardrail to be lifted');
  }
}

async function manifests(): Promise<Manifest[]> {
  const kustomization = load(await readFile(new URL('kustomization.yaml', COMPONENT), 'utf8')) as { resources: string[] };
  return Promise.all(kustomization.resources.map(async (file) => load(await readFile(fileURLToPath(new URL(file, COMPONENT)), 'utf8')) as Manifest));
}

function collection(m: Manifest): string {
  switch (m.kind) {
    case 'ValidatingAdmissionPolicy':
      return `${ADMISSION}/validatingadmissionpolicies`;
    case 'ValidatingAdmissionPolicyBinding':
      return `${ADMISSION}/validatingadmissionpolicybindings`;
    case 'ConfigMap':
      return `/api/v1/namespaces/${m.metadata.namespace ?? 'default'}/configmaps`;
    default:
      throw new Error(`deploy/components/guardrail: unexpected ${m.kind}`);
  }
}
