// Finds (or builds once, from Go modules) a real helm, with which the tests render Argo's
// community chart (test/fixtures/argo-helm) with deploy/helm's values, as a user's `helm upgrade`
// does (go-tool.ts: in the cache folder, in helm-HELM_VERSION/).
import { findGoTool } from './go-tool.ts';

/** HELM_VERSION is served by the Go module proxy and builds with the Go of these machines (/work/shared/REAL-ARGO.md). */
export const HELM_VERSION = 'v3.22.0';

/** findHelm returns the absolute path of the helm binary, building it once if need be (about 5 minutes cold on 2 cores). */
export function findHelm(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return findGoTool({ name: 'helm', pkg: 'helm.sh/helm/v3/cmd/helm', version: HELM_VERSION }, env);
}
