// The controller's container in deploy/standalone/deployment.yaml sets environment variables that
// shape its memory (glibc's MALLOC_MMAP_THRESHOLD_): the benchmark starts the controller with the
// same ones, read from that file, so that it measures the controller as it is deployed. Only
// literal values count; an entry taken from the pod (valueFrom) has no meaning outside one.
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';

const DEPLOYMENT = new URL('../../deploy/standalone/deployment.yaml', import.meta.url);
const CONTAINER = 'finalizer-sweeper';

interface Container {
  name?: string;
  env?: { name?: string; value?: unknown }[];
}

/** deploymentEnv is the literal environment of the Deployment's finalizer-sweeper container. */
export function deploymentEnv(): Record<string, string> {
  const doc = load(readFileSync(DEPLOYMENT, 'utf8')) as { spec?: { template?: { spec?: { containers?: Container[] } } } };
  const container = doc.spec?.template?.spec?.containers?.find((c) => c.name === CONTAINER);
  if (container === undefined) throw new Error(`${DEPLOYMENT.pathname}: no container named ${CONTAINER}`);
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (e.name !== undefined && typeof e.value === 'string') env[e.name] = e.value;
  }
  return env;
}
