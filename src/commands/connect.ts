// connect builds the one API client a command uses: credentials from the kubeconfig (or the
// in-cluster service account), one keep-alive connection pool, and the one API budget
// (--kube-api-qps/--kube-api-burst) that every request of the process shares.

import type { Settings } from '../config/settings.ts';
import { FALLBACK_API_RATE } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { ApiClient } from '../kube/client.ts';
import { createBudget } from '../kube/budget.ts';
import { KubeConfigError, loadTransport } from '../kube/credentials.ts';
import { EXIT } from './exit-codes.ts';
import { VERSION } from '../version.ts';

/** connect returns the client, or the exit code to stop with (the error is logged). */
export async function connect(settings: Settings, metrics: Metrics, logger: Logger): Promise<{ client: ApiClient } | number> {
  try {
    const transport = await loadTransport({ kubeconfig: settings.kubeconfig, context: settings.context });
    const client = new ApiClient(transport, {
      budget: createBudget({ qps: settings.kubeApiQps ?? FALLBACK_API_RATE.qps, burst: settings.kubeApiBurst ?? FALLBACK_API_RATE.burst }),
      observer: { request: (verb, code, seconds) => metrics.apiRequest(verb, code, seconds) },
      // Workers, owner reads and the two lists each hold a socket at the busiest moment.
      maxSockets: Math.max(32, settings.podCleanupWorkers + 8),
      userAgent: `finalizer-sweeper/${VERSION}`,
    });
    return { client };
  } catch (err) {
    if (err instanceof KubeConfigError) {
      logger.error({ err: err.message }, 'cannot load cluster credentials');
      return err.exitCode;
    }
    logger.error({ err: err instanceof Error ? err.message : String(err) }, 'cannot set up the API client');
    return EXIT.unreachable;
  }
}
