// `finalizer-sweeper sweep`: one pass over the cluster with the controller's own machinery. Owners
// are listed first, then pods page by page into the queue; owners the cache cannot vouch for are
// confirmed (one read each), then the workers drain the queue, most urgent first, and the command
// exits once every queued pod is done. It takes no lease: every write carries its
// resourceVersion, so it is safe beside a running controller. With --owner-crd-deleted it runs
// the mode for an uninstalled owner resource instead (sweep-uninstalled.ts). Namespaces being
// deleted are read before the pods (sweep-namespaces.ts): their pods go (namespace-deleting).

import { podListSelector, type Settings } from '../config/settings.ts';
import { createLogger, type Logger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import { PodStore, Store } from '../cache/store.ts';
import type { WorkflowMeta } from '../kube/objects.ts';
import { startEvents } from '../events/start.ts';
import { Cleanup } from '../controller/cleanup.ts';
import { Owners } from '../owners/owners.ts';
import { OwnerSettingsRefused, proveAtStart } from '../owners/settings-proof.ts';
import { OwnerKindCheck } from '../owners/owner-kind.ts';
import { batchedOwnerReads, resourceApis } from '../controller/api.ts';
import { connect } from './connect.ts';
import { listAll, trimmed } from '../cache/one-shot-list.ts';
import { readNamespaceDeletions } from './sweep-namespaces.ts';
import { NAMESPACES, NamespaceReadings } from '../namespaces/namespace-deletions.ts';
import { namespaceGet } from '../namespaces/namespace-reads.ts';
import { MetadataApi } from '../kube/metadata-api.ts';
import { listFailure } from './sweep-failure.ts';
import { runSweepUninstalled } from './sweep-uninstalled.ts';
import { EXIT } from './exit-codes.ts';
import { Shutdown } from './shutdown.ts';
import { SweepTally, renderSummary } from './sweep-tally.ts';
import { ProgressDisplay } from './sweep-progress.ts';
import { findOtherInstancePods, type OtherInstancePods } from './sweep-left-out.ts';
import { VERSION } from '../version.ts';

/** A pod whose removal keeps failing transiently is given up after this many tries. */
const MAX_TRIES = 5;
const IDLE_POLL_MS = 25;
/** How long a finished sweep waits for its Events to be written (a recorder write is quick, or dropped). */
const EVENTS_CLOSE_MS = 10_000;

export async function runSweep(settings: Settings): Promise<number> {
  const started = performance.now();
  const display = new ProgressDisplay(process.stderr);
  const logger = createLogger(settings, display.log ?? undefined);
  const shutdown = new Shutdown({ timeoutMs: settings.shutdownTimeoutMs, logger });
  try {
    if (settings.ownerCrdDeleted) return await runSweepUninstalled(settings, logger, shutdown);
    return await sweep(settings, logger, shutdown, display, started);
  } finally {
    display.stop();
    shutdown.dispose();
    await logger.flush();
  }
}

async function sweep(settings: Settings, logger: Logger, shutdown: Shutdown, display: ProgressDisplay, started: number): Promise<number> {
  const metrics = new Metrics({ version: VERSION });
  const connection = await connect(settings, metrics, logger);
  if (typeof connection === 'number') return connection;
  const { client } = connection;
  let proven: boolean;
  try {
    proven = await proveAtStart(client, settings.owner, shutdown.stop);
  } catch (err) {
    client.close();
    if (!(err instanceof OwnerSettingsRefused)) return listFailure(err, settings, logger);
    logger.error({ err: err.message }, 'refusing the owner settings');
    return EXIT.badConfig;
  }
  const apis = resourceApis(settings, client);

  const workflows = new Store<WorkflowMeta>();
  const pods = new PodStore();
  const tally = new SweepTally();
  const tries = new Map<string, number>();
  let removalsLeft = settings.maxRemovals ?? Infinity;
  const events = startEvents({ settings, client, metrics, logger, command: 'sweep' });
  // A reading renewed (a tie, or older than its bound) is read on the urgent lane: a pod waits on it.
  const namespaces = settings.namespaceDeleting ? new NamespaceReadings({ get: namespaceGet(new MetadataApi(client, NAMESPACES), 0) }) : null;
  if (namespaces !== null) events.skipNamespaces(namespaces);
  // Everything is listed before any owner is read: on a backlog, one list per namespace confirms its owners.
  const ownerReads = batchedOwnerReads(settings, apis, { workflows, pods }, logger);
  const owners = new Owners({
    owner: settings.owner,
    cache: { get: (namespace, name) => workflows.get(`${namespace}/${name}`) },
    read: ownerReads.read,
    listed: (namespace, name, observedAt) => ownerReads.listed(namespace, name, observedAt),
    metrics,
    logger,
    outageConsequence: 'No pod is freed on an owner found missing while it is not served; the pods concerned are reported as failed',
    ...(namespaces !== null ? { namespaces } : {}),
    settingsProven: proven,
  });
  const cleanup = new Cleanup({
    settings,
    pods,
    podApi: apis.podApi,
    readStatus: apis.readStatus,
    owners,
    metrics,
    logger,
    quota: { take: () => removalsLeft > 0 && removalsLeft-- > 0, giveBack: () => void removalsLeft++ },
    strictPriorities: true,
    events: events.removals,
  });
  const startWork = () =>
    cleanup.run({
      stop: shutdown.stop,
      abort: shutdown.abort,
      shouldRequeue: (key) => {
        const n = (tries.get(key) ?? 0) + 1;
        tries.set(key, n);
        return n < MAX_TRIES && !shutdown.stop.aborted;
      },
      onOutcome: (key, outcome) => {
        const final = (outcome.kind !== 'retry' && outcome.kind !== 'recheck') || (tries.get(key) ?? 0) >= MAX_TRIES || shutdown.stop.aborted;
        tally.finished(key, outcome, final);
      },
    });
  let work: Promise<void> = Promise.resolve();

  display.start(tally, settings.dryRun);
  let exit: number = EXIT.ok;
  // Whether the pods listed are the owner kind's at all (owner-kind.ts): judged before any work.
  const ownerKind = new OwnerKindCheck(settings.owner, settings.finalizer);
  let refused = false;
  let otherInstances: OtherInstancePods[] | null = null;
  try {
    if (namespaces !== null) await readNamespaceDeletions(settings, client, logger, namespaces, shutdown.stop);
    const listing = { namespaces: settings.namespaces, pageSize: settings.listPageSize, logger };
    await listAll(apis.workflows, listing, shutdown.stop, (obj) => {
      const wf = trimmed(obj, apis.trimWorkflow, logger);
      if (wf !== null) workflows.set(wf);
    });
    await listAll(apis.pods, { ...listing, labelSelector: podListSelector(settings) }, shutdown.stop, (obj) => {
      const pod = trimmed(obj, apis.trimPod, logger);
      if (pod === null || !pod.finalizers.includes(settings.finalizer)) return tally.listed(false, { action: 'none' });
      pods.set(pod);
      ownerKind.note(obj);
      tally.listed(true, cleanup.observe(pod));
    });
    otherInstances = await findOtherInstancePods((namespace, opts, signal) => apis.pods.list(namespace, opts, signal), settings, logger, shutdown.stop);
    const wrongKind = ownerKind.refusal();
    if (wrongKind !== null) {
      logger.error({ err: wrongKind.message }, 'refusing the owner settings');
      refused = true;
      exit = EXIT.badConfig;
    } else {
      // Work starts once everything is listed and every owner settled: the queue then hands
      // out pods, and --max-removals, strictly orphans first. Listing is cheap next to removing.
      await cleanup.settleOwners(pods.values(), shutdown.stop);
      work = startWork();
      await untilIdle(cleanup, shutdown.stop);
    }
  } catch (err) {
    if (!shutdown.stop.aborted) exit = listFailure(err, settings, logger);
  } finally {
    cleanup.queue.shutDown();
    await work;
    // The Events that say what was done, written before the report; an interrupted or refused sweep waits for none.
    await events.close(shutdown.stop.aborted || refused ? 0 : EVENTS_CLOSE_MS);
    display.stop();
    client.close();
  }

  const summary = tally.summary({
    dryRun: settings.dryRun,
    interrupted: shutdown.received !== null,
    maxRemovals: settings.maxRemovals,
    apiRequests: [...client.stats.requests.values()].reduce((a, b) => a + b, 0),
    wallSeconds: (performance.now() - started) / 1000,
    otherInstances,
  });
  if (!refused && (exit === EXIT.ok || summary.podsListed > 0)) {
    process.stdout.write(settings.output === 'json' ? JSON.stringify(summary) + '\n' : renderSummary(summary, process.stdout.isTTY === true));
  }
  if (exit !== EXIT.ok) return exit;
  if (summary.interrupted) return EXIT.interrupted;
  return summary.totals.failed > 0 ? EXIT.failed : EXIT.ok;
}

/** untilIdle resolves once every queued pod is done (retries included), or on stop. */
async function untilIdle(cleanup: Cleanup, stop: AbortSignal): Promise<void> {
  while (cleanup.queue.size() > 0 && !stop.aborted) await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
}
