// connect builds the one API client a command uses: credentials from the kubeconfig (or the
// in-cluster service account), one keep-alive connection pool, and the one API budget that every
// request of the process shares (--kube-api-budget-mode, --kube-api-qps, --kube-api-burst; see
// kube/budget-policy.ts), whose settings it logs and publishes as they change.

import type { Settings } from '../config/settings.ts';
import { FALLBACK_API_RATE } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { ApiClient } from '../kube/client.ts';
import { AdaptiveBudget } from '../kube/adaptive-budget.ts';
import type { BudgetEvent, BudgetState } from '../kube/budget-policy.ts';
import { KubeConfigError, loadTransport } from '../kube/credentials.ts';
import type { Transport } from '../kube/transport.ts';
import { EXIT } from './exit-codes.ts';
import { VERSION } from '../version.ts';

/**
 * connect returns the client (and the transport it was made from), or the exit code to stop with
 * (the error is logged).
 */
export async function connect(settings: Settings, metrics: Metrics, logger: Logger): Promise<{ client: ApiClient; transport: Transport } | number> {
  try {
    const transport = await loadTransport({ kubeconfig: settings.kubeconfig, context: settings.context });
    const budget = new AdaptiveBudget({
      mode: settings.kubeApiBudgetMode,
      qps: settings.kubeApiQps,
      burst: settings.kubeApiBurst,
      fallback: FALLBACK_API_RATE,
      maxConcurrency: concurrencyBound(settings),
      onChange: (event, state) => report(logger, metrics, event, state),
    });
    report(logger, metrics, null, budget.state);
    metrics.apiHost(new URL(transport.server).host);
    const client = new ApiClient(transport, {
      budget,
      observer: { request: (verb, code, seconds, resource) => metrics.apiRequest(verb, code, seconds, resource), forbidden: (verb, cause) => metrics.apiForbidden(verb, cause) },
      // Workers, owner reads and the two lists each hold a socket at the busiest moment.
      maxSockets: Math.max(32, settings.podCleanupWorkers + 8),
      userAgent: `finalizer-sweeper/${VERSION}`,
    });
    return { client, transport };
  } catch (err) {
    if (err instanceof KubeConfigError) {
      logger.error({ err: err.message }, 'cannot load cluster credentials');
      return err.exitCode;
    }
    logger.error({ err: err instanceof Error ? err.message : String(err) }, 'cannot set up the API client');
    return EXIT.unreachable;
  }
}

/**
 * leaderElectionClient is the client the Lease is renewed through: its own connection and no
 * budget, as client-go's leader election has its own client. A Lease call comes once a retry
 * period, so it needs no limit; going through the shared budget, it waited out every pause a
 * throttled spell of the workers' calls caused, and a leader could miss its renew deadline for
 * throttling it did not cause. Its requests still count in the request metrics.
 */
export function leaderElectionClient(transport: Transport, metrics: Metrics): ApiClient {
  return new ApiClient(transport, {
    observer: { request: (verb, code, seconds, resource) => metrics.apiRequest(verb, code, seconds, resource), forbidden: (verb, cause) => metrics.apiForbidden(verb, cause) },
    maxSockets: 2,
    userAgent: `finalizer-sweeper/${VERSION} leader-election`,
  });
}

/**
 * concurrencyBound is the most API calls the process can have in flight at once: one per worker
 * (a patch, or a read of a pod or an owner; the sweep's owner confirmations run in as many lanes),
 * one list or watch opening per reflector (pods and owners, in each namespace or cluster-wide),
 * and the Lease. Under APF the budget never holds calls below it unless the server answers 429.
 */
export function concurrencyBound(s: Pick<Settings, 'podCleanupWorkers' | 'namespaces'>): number {
  return s.podCleanupWorkers + 2 * Math.max(1, s.namespaces.length) + 1;
}

/**
 * report logs the budget at start (event null) and as it changes, and publishes it as metrics.
 * Concurrency moves often under 429s: the first cut and the recovery are logged, the steps
 * between at debug level; the gauge shows every value.
 */
function report(logger: Logger, metrics: Metrics, event: BudgetEvent | null, s: BudgetState): void {
  metrics.apiBudget(s);
  const fields = {
    event: event?.kind ?? 'start',
    mode: s.mode,
    qps: s.rate?.qps ?? 'none',
    burst: s.rate?.burst ?? 'none',
    maxConcurrency: s.maxConcurrency,
    concurrency: s.concurrency,
    reason: s.reason,
  };
  switch (event?.kind) {
    case undefined:
    case 'apf-detected':
    case 'no-apf':
    case 'recovered':
      return logger.info(fields, 'API budget');
    case 'throttled':
      if (event.first) return logger.warn({ ...fields, pauseMs: event.pauseMs }, 'API budget: the API server answered 429, pausing and cutting concurrency');
      return logger.debug({ ...fields, pauseMs: event.pauseMs }, 'API budget: 429');
    case 'grown':
      return logger.debug(fields, 'API budget: concurrency grows');
  }
}
