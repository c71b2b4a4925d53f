// Argo's own manifests (`manifests/` of its Go module, at the version the real-Argo bed builds):
// the workflow-controller and argo-server Deployments, their RBAC and the full CRDs, which Argo's
// installation guide says to apply server-side (too large for the last-applied annotation). The
// module is the one src/testbed/build-argo-bed.sh builds Argo from, so it is in the Go module
// cache wherever the bed is; where it is not, `go mod download` fetches it as the build would.
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { ARGO_VERSION } from '../../src/testbed/argo-binaries.ts';
import { run } from './deploy.ts';

export const ARGO_MODULE = 'github.com/argoproj/argo-workflows/v4';

let found: Promise<string> | undefined;

/** argoManifests is the folder of Argo's manifests (namespace-install/, cluster-install/, base/crds/full/ ...). */
export function argoManifests(): Promise<string> {
  found ??= locate();
  return found;
}

async function locate(): Promise<string> {
  const cache = (await run('go', ['env', 'GOMODCACHE']).catch(() => ({ stdout: join(process.env['HOME'] ?? '', 'go/pkg/mod') }))).stdout.trim();
  const cached = join(cache, `${ARGO_MODULE}@${ARGO_VERSION}`, 'manifests');
  if (await access(cached).then(() => true, () => false)) return cached;
  const { stdout } = await run('go', ['mod', 'download', '-json', `${ARGO_MODULE}@${ARGO_VERSION}`], undefined, { GOFLAGS: '-mod=mod', GOWORK: 'off' }).catch((err: unknown) => {
    throw new Error(`Argo's manifests come from its Go module ${ARGO_MODULE}@${ARGO_VERSION}, which needs go and the module proxy: ${String(err)}`);
  });
  return join((JSON.parse(stdout) as { Dir: string }).Dir, 'manifests');
}
