// CustomResourceDefinitions for the test bed: the Workflow CRD from config/, and installing CRDs
// so that they are usable before anything (the garbage collector above all) starts watching.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { load } from 'js-yaml';
import type { ApiClient } from './http.ts';

/** WORKFLOW_CRD_PATH is the Workflow CRD the test bed installs by default. */
export const WORKFLOW_CRD_PATH = join(import.meta.dirname, '..', '..', 'config', 'workflow-crd.yaml');

/**
 * loadWorkflowCrd parses config/workflow-crd.yaml as plain YAML. (client-node's loadYaml maps it
 * onto its typed model, which renames the schema's x-kubernetes-* keys: the API server then
 * pruned every Workflow's spec and status to {}.)
 */
export async function loadWorkflowCrd(): Promise<object> {
  return load(await readFile(WORKFLOW_CRD_PATH, 'utf8')) as object;
}

/** loadCrdDir parses every *.yaml file of a folder (one CRD each), in name order. */
export async function loadCrdDir(dir: string): Promise<object[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  return Promise.all(files.map(async (f) => load(await readFile(join(dir, f), 'utf8')) as object));
}

interface Crd {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string }[] };
}

/** installCrds creates each CRD and waits until the API server reports it Established. */
export async function installCrds(client: ApiClient, crds: object[], timeoutMs = 30_000): Promise<void> {
  const path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const names = await Promise.all(crds.map(async (crd) => (await client.call<Crd>('POST', path, crd)).metadata.name));
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    while (!established(await client.call<Crd>('GET', `${path}/${name}`))) {
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function established(crd: Crd): boolean {
  return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
}
