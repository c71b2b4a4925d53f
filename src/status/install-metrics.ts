// What `status` reads from an install's /metrics (src/metrics/metrics.ts names each series): the
// readiness checks, leadership, the removals by result and the errors counted since the process
// started. Counters are totals since that start, not rates: status says what happened, the alerts
// say how fast.

import type { Sample } from './metrics-text.ts';

const PREFIX = 'finalizer_sweeper_';

/** InstallMetrics is the part of one replica's metrics that `status` reports. */
export interface InstallMetrics {
  /** ready{check}: each /readyz check, true when it passes. Empty when the series is absent (an older version). */
  ready: Record<string, boolean>;
  /** leader: this replica leads (or runs without leader election); null when absent. */
  leader: boolean | null;
  /** config_info's dry_run label: true when the replica removes nothing; null when absent. */
  dryRun: boolean | null;
  /** removals_total summed over reasons, by result (removed, failed, ...). */
  removals: Record<string, number>;
  /** api_forbidden_total{cause="denied"}: requests RBAC or an admission policy refused. */
  forbiddenDenied: number;
  /** list_watch_failures_total summed. */
  listWatchFailures: number;
  /** config_last_reload_successful: false while a change to the config file is rejected; null when absent. */
  configReloadOk: boolean | null;
  /** other_instance_pods{instance_id}: pods the selector leaves out for their instance ID alone. */
  otherInstancePods: Record<string, number>;
  /** cached_objects{resource="pods"}: pods in the cache; null when absent. */
  cachedPods: number | null;
}

/** installMetrics reads InstallMetrics from one scrape. */
export function installMetrics(samples: readonly Sample[]): InstallMetrics {
  const m: InstallMetrics = {
    ready: {}, leader: null, dryRun: null, removals: {}, forbiddenDenied: 0, listWatchFailures: 0,
    configReloadOk: null, otherInstancePods: {}, cachedPods: null,
  };
  for (const s of samples) {
    if (!s.name.startsWith(PREFIX)) continue;
    const name = s.name.slice(PREFIX.length);
    switch (name) {
      case 'ready':
        if (s.labels['check'] !== undefined) m.ready[s.labels['check']] = s.value === 1;
        break;
      case 'leader':
        m.leader = s.value === 1;
        break;
      case 'config_info':
        m.dryRun = s.labels['dry_run'] === 'true';
        break;
      case 'removals_total': {
        const result = s.labels['result'] ?? '';
        m.removals[result] = (m.removals[result] ?? 0) + s.value;
        break;
      }
      case 'api_forbidden_total':
        if (s.labels['cause'] === 'denied') m.forbiddenDenied += s.value;
        break;
      case 'list_watch_failures_total':
        m.listWatchFailures += s.value;
        break;
      case 'config_last_reload_successful':
        m.configReloadOk = s.value === 1;
        break;
      case 'other_instance_pods':
        m.otherInstancePods[s.labels['instance_id'] ?? ''] = s.value;
        break;
      case 'cached_objects':
        if (s.labels['resource'] === 'pods') m.cachedPods = s.value;
        break;
    }
  }
  return m;
}
