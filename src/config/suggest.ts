// Suggestions for unknown config-file keys: the usual mistakes are kebab-case names,
// the Settings field names (namespaces, resyncPeriodMs) and plain typos.

/** MISNAMED maps names people are likely to write to the key they meant. */
const MISNAMED: Record<string, string> = {
  namespaces: 'namespace',
  reasons: 'reason',
  resyncPeriodMs: 'resyncPeriod',
  forceAfterMs: 'forceAfter',
  shutdownTimeoutMs: 'shutdownTimeout',
  leaseDuration: 'leaderElectionLeaseDuration',
  leaseDurationMs: 'leaderElectionLeaseDuration',
  renewDeadline: 'leaderElectionRenewDeadline',
  renewDeadlineMs: 'leaderElectionRenewDeadline',
  retryPeriod: 'leaderElectionRetryPeriod',
  retryPeriodMs: 'leaderElectionRetryPeriod',
  workers: 'podCleanupWorkers',
  qps: 'kubeApiQps',
  burst: 'kubeApiBurst',
  selector: 'podSelector',
};

/** suggestKey returns the known key closest to an unknown one, or null if none is close. */
export function suggestKey(unknown: string, known: readonly string[]): string | null {
  const direct = MISNAMED[unknown];
  if (direct !== undefined && known.includes(direct)) return direct;
  const target = normalize(unknown);
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const key of known) {
    const distance = editDistance(target, normalize(key));
    if (distance < bestDistance) {
      best = key;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(target.length / 4)) ? best : null;
}

function normalize(key: string): string {
  return key.toLowerCase().replace(/[-_]/g, '');
}

/** editDistance is the Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
