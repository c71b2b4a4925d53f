// `finalizer-sweeper explain pod NAMESPACE/NAME`: why one pod is stuck, with evidence, before
// anyone removes anything. Read-only: no Lease, no cache, a handful of reads, and our removal
// patch sent only as a server-side dry run (src/explain/read-pod-evidence.ts). Exit codes
// (docs/explain.md): 0 not stuck, 1 stuck (Terminating and held by a finalizer, which the report
// names), 2 bad input, 3 the pod cannot be read.

import type { Settings } from '../config/settings.ts';
import { createLogger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import { ApiError, isForbidden, isNetworkError, isUnauthorized } from '../kube/errors.ts';
import { buildPodReport, exitCodeOf } from '../explain/pod-report.ts';
import { PodUnreadable, readPodEvidence } from '../explain/read-pod-evidence.ts';
import { renderPodReport } from '../explain/render-pod-report.ts';
import { connect } from './connect.ts';
import { EXIT } from './exit-codes.ts';
import { VERSION } from '../version.ts';

export async function runExplainPod(settings: Settings, target: { namespace: string; name: string }): Promise<number> {
  const logger = createLogger(settings);
  try {
    const connection = await connect(settings, new Metrics({ version: VERSION }), logger);
    if (typeof connection === 'number') return connection;
    const { client } = connection;
    try {
      const evidence = await readPodEvidence(settings, client, target.namespace, target.name);
      const report = buildPodReport(evidence);
      process.stdout.write(settings.output === 'json' ? JSON.stringify(report) + '\n' : renderPodReport(report, process.stdout.isTTY === true));
      return exitCodeOf(report);
    } catch (err) {
      if (!(err instanceof PodUnreadable)) throw err;
      logger.error({ pod: `${target.namespace}/${target.name}`, err: err.message }, `cannot read the pod: ${hintFor(err.cause)}`);
      return EXIT.unreachable;
    } finally {
      client.close();
    }
  } finally {
    await logger.flush();
  }
}

/** hintFor says what to look at when the pod itself cannot be read. */
function hintFor(cause: unknown): string {
  if (isUnauthorized(cause) || isForbidden(cause)) return 'check the credentials and RBAC (get pods)';
  if (isNetworkError(cause) || (cause instanceof ApiError && cause.status >= 500)) return 'cannot reach the API server';
  return 'the API server refused the read';
}
