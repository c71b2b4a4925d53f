// The guardrail (deploy/components/guardrail) put in force and lifted on a benchmark's control
// plane, which must authorize with RBAC, since the guardrail asks RBAC who may remove the
// finalizer: its objects read from the component's own files (rendered without a `namespace:`,
// kustomize leaves them as written), and each change waited out with a probe, since the API
// server loads policies and bindings asynchronously. grantAccounts gives the benchmark's accounts
// what the flavours' RBAC gives ours (deploy/base/clusterrole.yaml, with the component's
// remove-only rule) and a tenant's (pods, get and patch), guarded or not.
//
// Lifting it deletes the binding alone: the policy and Argo's grant stay, as in a cluster where
// they are created once.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { load, loadAll } from 'js-yaml';
import { ApiError } from '../../src/testbed/http.ts';
import type { Cluster } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, newPod } from '../../src/testbed/fixtures.ts';
import { createNamespace } from './populate.ts';

const COMPONENT = new URL('../../deploy/components/guardrail/', import.meta.url);
const OUR_ROLE = new URL('../../deploy/base/clusterrole.yaml', import.meta.url);
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
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

  /** on creates what is missing of the policy, its binding and Argo's grant, and resolves once the API server enforces them. */
  async on(): Promise<void> {
    for (const m of await manifests()) await create(this.#admin, m);
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
   * policy once it is in force; accepted once lifted.
   */
  async #until(enforced: boolean): Promise<void> {
    if ((await this.#admin.getPod(this.#namespace, PROBE)) === null) {
      await this.#admin.createPod(newPod({ namespace: this.#namespace, name: PROBE, finalizers: [ARGO_FINALIZER] }));
    }
    const path = `/api/v1/namespaces/${this.#namespace}/pods/${PROBE}?dryRun=All`;
    const refused = (): Promise<boolean> =>
      this.#prober.client.call('PATCH', path, { metadata: { finalizers: null } }, MERGE).then(
        () => false,
        (err: unknown) => err instanceof ApiError && err.status === 403 && err.message.includes("ValidatingAdmissionPolicy 'finalizer-sweeper-guardrail'"),
      );
    await this.#admin.waitFor(async () => (await refused()) === enforced, 60_000, enforced ? 'the guardrail to be enforced' : 'the guardrail to be lifted');
  }
}

/**
 * grantAccounts binds `sweeper` (namespace and name of a service account) to our ClusterRole with
 * the guardrail's remove-only rule, and `tenant` to getting and patching pods, which the prober
 * needs to reach the policy at all.
 */
export async function grantAccounts(admin: Cluster, sweeper: { namespace: string; name: string }, tenant: { namespace: string; name: string }): Promise<void> {
  const ours = load(await readFile(OUR_ROLE, 'utf8')) as { rules: object[] };
  const removeOnly = (load(await readFile(new URL('remove-only.yaml', COMPONENT), 'utf8')) as Array<{ value: object }>)[0]?.value;
  const grant = (name: string, rules: object[], sa: { namespace: string; name: string }): Manifest[] => [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules } as Manifest,
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ kind: 'ServiceAccount', ...sa }] } as Manifest,
  ];
  for (const m of [
    ...grant('bench-finalizer-sweeper', [...ours.rules, ...(removeOnly === undefined ? [] : [removeOnly])], sweeper),
    ...grant('bench-tenant-pods', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }], tenant),
  ]) await create(admin, m);
}

async function create(admin: Cluster, m: Manifest): Promise<void> {
  if (m.metadata.namespace !== undefined) await createNamespace(admin, m.metadata.namespace);
  await admin.client.call('POST', collection(m), m).catch((err: unknown) => {
    if (!(err instanceof ApiError && err.status === 409)) throw err;
  });
}

async function manifests(): Promise<Manifest[]> {
  const kustomization = load(await readFile(new URL('kustomization.yaml', COMPONENT), 'utf8')) as { resources: string[] };
  const files = await Promise.all(kustomization.resources.map(async (file) => loadAll(await readFile(fileURLToPath(new URL(file, COMPONENT)), 'utf8')) as Manifest[]));
  return files.flat();
}

function collection(m: Manifest): string {
  switch (m.kind) {
    case 'ValidatingAdmissionPolicy':
      return `${ADMISSION}/validatingadmissionpolicies`;
    case 'ValidatingAdmissionPolicyBinding':
      return `${ADMISSION}/validatingadmissionpolicybindings`;
    case 'ClusterRole':
      return `${RBAC}/clusterroles`;
    case 'ClusterRoleBinding':
      return `${RBAC}/clusterrolebindings`;
    default:
      throw new Error(`deploy/components/guardrail: unexpected ${m.kind}`);
  }
}
