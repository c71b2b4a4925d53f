// `finalizer-sweeper explain pod NAMESPACE/NAME` and `explain namespace NAME`: why a pod, or a
// namespace, is stuck, with evidence, before anyone removes anything. Read-only: no Lease, no
// cache, a bounded number of reads, and for the pod our removal patch sent only as a server-side
// dry run (src/explain/read-pod-evidence.ts, read-namespace-evidence.ts). Exit codes
// (docs/explain.md): 0 not stuck, 1 stuck (the report names what holds it), 2 bad input, 3 the
// pod, or the namespace and its pods, cannot be read.

import type { Settings } from '../config/settings.ts';
import { createLogger, type Logger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import type { ApiClient } from '../kube/client.ts';
import { ApiError, isForbidden, isNetworkError, isUnauthorized } from '../kube/errors.ts';
import { buildPodReport, exitCodeOf } from '../explain/pod-report.ts';
import { PodUnreadable, readPodEvidence } from '../explain/read-pod-evidence.ts';
import { renderPodReport } from '../explain/render-pod-report.ts';
import { buildNamespaceReport, exitCodeOfNamespace } from '../explain/namespace-report.ts';
import { NamespaceUnreadable, readNamespaceEvidence } from '../explain/read-namespace-evidence.ts';
import { renderNamespaceReport } from '../explain/render-namespace-report.ts';
import { connect } from './connect.ts';
import { checkOwnerSettings, type OwnerSettingsVerdict } from '../owners/owner-settings.ts';
import { refusalOf } from '../owners/settings-proof.ts';
import { EXIT } from './exit-codes.ts';
import { VERSION } from '../version.ts';

export function runExplainPod(settings: Settings, target: { namespace: string; name: string }): Promise<number> {
  return withClient(settings, async (client, logger) => {
    try {
      const report = buildPodReport(await readPodEvidence(settings, client, target.namespace, target.name));
      print(settings, report, () => renderPodReport(report, process.stdout.isTTY === true));
      return exitCodeOf(report);
    } catch (err) {
      if (!(err instanceof PodUnreadable)) throw err;
      logger.error({ pod: `${target.namespace}/${target.name}`, err: err.message }, `cannot read the pod: ${hintFor(err.cause, 'get pods')}`);
      return EXIT.unreachable;
    }
  });
}

export function runExplainNamespace(settings: Settings, name: string): Promise<number> {
  return withClient(settings, async (client, logger) => {
    try {
      const report = buildNamespaceReport(await readNamespaceEvidence(settings, client, name, logger));
      print(settings, report, () => renderNamespaceReport(report, process.stdout.isTTY === true));
      return exitCodeOfNamespace(report);
    } catch (err) {
      if (!(err instanceof NamespaceUnreadable)) throw err;
      logger.error({ namespace: name, err: err.message }, `cannot ${err.verb}: ${hintFor(err.cause, 'get namespaces and list pods')}`);
      return EXIT.unreachable;
    }
  });
}

/** withClient connects as every command does, runs `explain`, and closes the client and the log. */
async function withClient(settings: Settings, explain: (client: ApiClient, logger: Logger) => Promise<number>): Promise<number> {
  const logger = createLogger(settings);
  try {
    // The API budget's start line is for a controller's log; at a terminal it is noise before the
    // report. Kept at debug; its warnings (429s) stay warnings.
    const connection = await connect(settings, new Metrics({ version: VERSION }), { ...logger, info: logger.debug });
    if (typeof connection === 'number') return connection;
    try {
      const refused = await ownerSettingsRefusal(connection.client, settings, logger);
      if (refused !== null) return refused;
      return await explain(connection.client, logger);
    } finally {
      connection.client.close();
    }
  } finally {
    await logger.flush();
  }
}

/**
 * ownerSettingsRefusal is the exit code when the owner settings do not name the owner (discovery
 * shows another kind under the resource, or the kind under another resource), else null. A
 * group/version that lists neither name is not refused here: the owner's CRD may be uninstalled,
 * which the report names (owners/crd-absence.ts).
 */
async function ownerSettingsRefusal(client: ApiClient, settings: Settings, logger: Logger): Promise<number | null> {
  let verdict: OwnerSettingsVerdict;
  try {
    verdict = await checkOwnerSettings(client, settings.owner);
  } catch (err) {
    logger.error({ err: err instanceof Error ? err.message : String(err) }, `cannot read discovery to check the owner settings: ${hintFor(err, 'get on the discovery documents')}`);
    return EXIT.unreachable;
  }
  const refused = refusalOf(settings.owner, verdict, false);
  if (refused === null) return null;
  logger.error({ err: refused.message }, 'refusing the owner settings');
  return EXIT.badConfig;
}

/** print writes the report to stdout: the object itself under --output json, else the text. */
function print(settings: Settings, report: object, text: () => string): void {
  process.stdout.write(settings.output === 'json' ? JSON.stringify(report) + '\n' : text());
}

/** hintFor says what to look at when what explain needs cannot be read. */
function hintFor(cause: unknown, verbs: string): string {
  if (isUnauthorized(cause) || isForbidden(cause)) return `check the credentials and RBAC (${verbs})`;
  if (isNetworkError(cause) || (cause instanceof ApiError && cause.status >= 500)) return 'cannot reach the API server';
  return 'the API server refused the read';
}
