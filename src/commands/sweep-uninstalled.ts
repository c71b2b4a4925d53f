// `finalizer-sweeper sweep --owner-crd-deleted [--confirm DIGEST]`: the way out after Argo is
// uninstalled. Deleting a CRD deletes every object of it, so every owner is gone, yet the owner
// resource answers 404 "not served" for good, which the ordinary sweep must never read as
// absence. This mode proves the deletion instead (owners/crd-absence.ts), lists the pods that
// name an owner of that kind and hold our finalizer, and prints them with a digest. Only a second
// run that carries the digest writes, and only if the same pods, at the same resourceVersions,
// are listed again; each patch carries the resourceVersion listed, so a pod that changed after
// the confirmation is left alone (409), not read again and retried. Exit codes: 0 listed or all
// freed, 1 some pods not freed, 2 owners not gone or the digest does not match, 3 the deletion
// cannot be confirmed or the API server is unreachable, 130 interrupted.

import pRetry from 'p-retry';
import { podListSelector, type Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import type { ApiClient } from '../kube/client.ts';
import type { PodMeta } from '../kube/objects.ts';
import { isConflict, isObjectNotFound, isRetryable } from '../kube/errors.ts';
import { resourceApis, type ResourceApis } from '../controller/api.ts';
import { confirmOwnerUninstalled, crdNameOf } from '../owners/crd-absence.ts';
import { removalPatch } from '../work/removal-patch.ts';
import { connect } from './connect.ts';
import { EXIT } from './exit-codes.ts';
import type { Shutdown } from './shutdown.ts';
import { listAll, trimmed } from '../cache/one-shot-list.ts';
import { listFailure } from './sweep-failure.ts';
import { confirmCommand, freedWhenUninstalled, selectionDigest } from '../owners/uninstalled-selection.ts';
import { mismatched, renderUninstalled, totalsOf, type UninstalledPod, type UninstalledReport } from './uninstalled-report.ts';
import { VERSION } from '../version.ts';

/** The removals' lane in the API budget: the sweep's own (orphans), above its lists. */
const REMOVAL_PRIORITY = 0;

export async function runSweepUninstalled(settings: Settings, logger: Logger, shutdown: Shutdown): Promise<number> {
  const started = performance.now();
  const connection = await connect(settings, new Metrics({ version: VERSION }), logger);
  if (typeof connection === 'number') return connection;
  const { client } = connection;
  try {
    return await run(settings, client, logger, shutdown, started);
  } catch (err) {
    if (shutdown.stop.aborted) return EXIT.interrupted;
    throw err;
  } finally {
    client.close();
  }
}

async function run(settings: Settings, client: ApiClient, logger: Logger, shutdown: Shutdown, started: number): Promise<number> {
  const confirmation = await confirmOwnerUninstalled(client, settings.owner, shutdown.stop);
  if (confirmation.state !== 'uninstalled') {
    logger.error({ crd: crdNameOf(settings.owner) }, `--owner-crd-deleted frees nothing: ${confirmation.detail}`);
    return confirmation.state === 'installed' ? EXIT.badConfig : EXIT.unreachable;
  }
  const apis = resourceApis(settings, client);
  let listed: Awaited<ReturnType<typeof listFreeable>>;
  try {
    listed = await listFreeable(settings, apis, logger, shutdown.stop);
  } catch (err) {
    if (shutdown.stop.aborted) return EXIT.interrupted;
    return listFailure(err, settings, logger);
  }
  const digest = selectionDigest(listed.pods, settings.finalizer, settings.owner);
  const report: UninstalledReport = {
    mode: 'owner-crd-deleted',
    crd: crdNameOf(settings.owner),
    ownerKind: settings.owner.kind,
    finalizer: settings.finalizer,
    confirmation,
    dryRun: settings.confirm !== digest,
    digest,
    confirmed: settings.confirm,
    command: null,
    podsListed: listed.podsListed,
    otherPodsWithFinalizer: listed.others,
    pods: listed.pods.map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid, resourceVersion: p.resourceVersion, finalizers: p.finalizers, owner: p.owner!, result: 'listed', error: null })),
    totals: totalsOf([]),
    interrupted: false,
    apiRequests: 0,
    wallSeconds: 0,
  };
  if (report.dryRun && report.pods.length > 0) report.command = confirmCommand(settings, digest);
  if (mismatched(report)) logger.error({ confirmed: settings.confirm, digest }, 'the pods changed since the dry run: nothing was written; check the new listing and confirm its digest');
  if (!report.dryRun) {
    await freeAll(listed.pods, report.pods, apis, settings, logger, shutdown);
    report.totals = totalsOf(report.pods);
  }
  report.interrupted = shutdown.received !== null;
  report.apiRequests = [...client.stats.requests.values()].reduce((a, b) => a + b, 0);
  report.wallSeconds = Math.round(performance.now() - started) / 1000;
  process.stdout.write(settings.output === 'json' ? JSON.stringify(report) + '\n' : renderUninstalled(report));
  return exitCodeOf(report);
}

function exitCodeOf(r: UninstalledReport): number {
  if (mismatched(r)) return EXIT.badConfig;
  if (r.interrupted) return EXIT.interrupted;
  const t = r.totals;
  return t.changed + t.failed + t.unfinished > 0 ? EXIT.failed : EXIT.ok;
}

/** listFreeable lists the selected pods and keeps those freedWhenUninstalled picks; the others holding our finalizer are counted. */
async function listFreeable(settings: Settings, apis: ResourceApis, logger: Logger, stop: AbortSignal): Promise<{ pods: PodMeta[]; podsListed: number; others: number }> {
  const pods: PodMeta[] = [];
  let podsListed = 0;
  let others = 0;
  const listing = { namespaces: settings.namespaces, pageSize: settings.listPageSize, labelSelector: podListSelector(settings), logger };
  await listAll(apis.pods, listing, stop, (obj) => {
    podsListed++;
    const pod = trimmed(obj, apis.trimPod, logger);
    if (pod === null) return;
    if (freedWhenUninstalled(pod, settings.finalizer)) pods.push(pod);
    else if (pod.finalizers.includes(settings.finalizer)) others++;
  });
  return { pods, podsListed, others };
}

/**
 * freeAll removes our finalizer from each pod as listed, --pod-cleanup-workers at a time under
 * the client's API budget. A transient failure (5xx, 429, the network) is tried again with the
 * same patch: it carries the listed resourceVersion, so a retry can never write over a change.
 * On SIGINT/SIGTERM no new pod is started; those left are reported unfinished.
 */
async function freeAll(pods: readonly PodMeta[], results: UninstalledPod[], apis: ResourceApis, settings: Settings, logger: Logger, shutdown: Shutdown): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < pods.length; i = next++) {
      const pod = pods[i]!;
      const result = results[i]!;
      if (shutdown.stop.aborted) {
        result.result = 'unfinished';
        continue;
      }
      const patch = removalPatch(pod, settings.finalizer)!;
      const key = `${pod.namespace}/${pod.name}`;
      try {
        await pRetry(() => apis.pods.patchMergeUnread(pod.namespace, pod.name, patch, { priority: REMOVAL_PRIORITY, signal: shutdown.abort }), {
          retries: 3,
          minTimeout: 200,
          signal: shutdown.abort,
          shouldRetry: ({ error }) => isRetryable(error),
        });
        result.result = 'removed';
        logger.info({ pod: key, reason: 'owner-gone', crd: crdNameOf(settings.owner) }, 'finalizer removed');
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        result.error = message;
        if (isConflict(err)) {
          result.result = 'changed';
          logger.warn({ pod: key, err: message }, 'the pod changed after the confirmation (409): left alone; run a new dry run');
        } else if (isObjectNotFound(err)) {
          result.result = 'already-gone';
          result.error = null;
        } else {
          result.result = shutdown.abort.aborted ? 'unfinished' : 'failed';
          logger.error({ pod: key, err: message }, 'finalizer removal failed');
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(settings.podCleanupWorkers, pods.length) }, worker));
}
