// `finalizer-sweeper controller`: wiring only. Caches run on every replica (followers keep them
// warm so a takeover starts at once); the queue is worked only by the leader. One shutdown
// signal fans out to everything; see shutdown.ts.

import type { Settings } from '../config/settings.ts';
import { createLogger, type Logger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import { startHealthServer, startMetricsServer, type Serving } from '../metrics/server.ts';
import { Controller } from '../controller/controller.ts';
import { startEvents } from '../events/start.ts';
import { LeaseElector, defaultIdentity } from '../leader/lease-elector.ts';
import type { LeaseApi } from '../leader/lease.ts';
import { connect, leaderElectionClient } from './connect.ts';
import type { ApiClient } from '../kube/client.ts';
import { OwnerSettingsRefused, proveAtStart } from '../owners/settings-proof.ts';
import { EXIT } from './exit-codes.ts';
import { boundHeapGrowth, collectWhenGrown, giveBackPeriodically, releaseMemory } from './release-memory.ts';
import { Shutdown } from './shutdown.ts';
import { watchConfigFile } from './config-watch.ts';
import { ConfigReload, type WatchedConfig } from './config-reload.ts';
import { VERSION } from '../version.ts';
import { OtherInstances } from '../controller/other-instances.ts';
import { MetadataApi, PODS } from '../kube/metadata-api.ts';

/** How long a stopping controller waits for its pending Events to be written. */
const EVENTS_CLOSE_MS = 5_000;
/**
 * LIST_GARBAGE_BYTES: while listing, a full collection runs each time the heap in use has grown
 * this much (see collectWhenGrown). With 100,000 pods the sync peaked at 436 MB of RSS without it.
 * With V8's young generation capped (runtime-tuning.ts), 16 MiB peaked at 169 to 176 MB against
 * 185 to 189 for 32 MiB in the same runs, synced no later; 8 MiB peaked no lower (166) and synced
 * a seventh later (`git show 95e957c:BENCHMARKS.md`, "The list's collection threshold").
 */
const LIST_GARBAGE_BYTES = 16 * 2 ** 20;
/** GIVE_BACK_EVERY_MS: how often the heap V8 keeps beyond what is in use is checked (see giveBackPeriodically). */
const GIVE_BACK_EVERY_MS = 60_000;
/**
 * HEAP_GROWTH_BYTES: at any time, a full collection runs once the heap in use has grown this much
 * since the last one, checked every HEAP_CHECK_EVERY_MS (see boundHeapGrowth). The same room as
 * giveBackPeriodically's slack: about a fifth of the controller's RSS with 100,000 cached pods,
 * so that the peak stays near the synced size, yet many seconds of a drain's promotions to the old
 * generation, so that the forced collections stay rare beside V8's own.
 */
const HEAP_GROWTH_BYTES = 32 * 2 ** 20;
const HEAP_CHECK_EVERY_MS = 1_000;

/**
 * runController runs until a signal, or until `configFile` (the file --config named, as it was
 * read for `settings`) changes to a text it can start with: see config-reload.ts.
 */
export async function runController(settings: Settings, configFile: WatchedConfig | null = null): Promise<number> {
  const logger = createLogger(settings);
  const shutdown = new Shutdown({ timeoutMs: settings.shutdownTimeoutMs, logger });
  const metrics = new Metrics({ version: VERSION });
  metrics.recordConfig(settings);

  const connection = await connect(settings, metrics, logger);
  if (typeof connection === 'number') {
    shutdown.dispose();
    return finish(logger, connection);
  }
  const { client, transport } = connection;

  const proven = await ownerSettingsAtStart(client, settings, logger);
  if (typeof proven === 'number') {
    client.close();
    shutdown.dispose();
    return finish(logger, proven);
  }
  let exitCode: number = EXIT.ok;
  const events = startEvents({ settings, client, metrics, logger, command: 'controller' });
  const controller = new Controller({
    settings,
    client,
    metrics,
    logger,
    events: events.removals,
    afterListPage: collectWhenGrown(LIST_GARBAGE_BYTES),
    ownerSettingsProven: proven,
    onOwnerSettingsRefused: () => {
      exitCode = EXIT.badConfig;
      shutdown.begin(settings.shutdownTimeoutMs);
    },
  });
  // No Event into a namespace being deleted: the API server refuses them there.
  if (controller.namespaces !== null) events.skipNamespaces(controller.namespaces);
  // Exported as finalizer_sweeper_ready{check} too: the sidecar flavours probe no readiness (it
  // would take Argo's pod NotReady), so only the metric, and its alert, see a replica that never gets ready.
  const readiness = {
    'caches-synced': () => controller.synced(),
    watches: () => controller.watchesHealthy(),
    'owner-resource': () => controller.ownerResourceServed(),
    'owner-settings': () => controller.owners.settingsProven(),
    'owner-kind': () => controller.ownerKindReady(),
  };
  metrics.trackReadiness(readiness);
  const servers: Array<Serving | null> = [];
  try {
    servers.push(await startMetricsServer(settings.metricsBindAddress, metrics.registry));
    servers.push(await startHealthServer(settings.healthProbeBindAddress, { readyz: readiness }));
  } catch (err) {
    logger.error({ err }, 'cannot serve metrics or health probes');
    await closeAll(servers);
    client.close();
    shutdown.dispose();
    return finish(logger, EXIT.badConfig);
  }

  const [metricsServer, healthServer] = servers;
  logger.info(
    { version: VERSION, namespaces: settings.namespaces, finalizer: settings.finalizer, dryRun: settings.dryRun, metricsPort: metricsServer?.port ?? null, healthPort: healthServer?.port ?? null },
    'controller starting',
  );
  stopWhenConfigChanges(configFile, settings, client, shutdown, metrics, logger);
  const caches = controller.runCaches(shutdown.stop);
  const pods = new MetadataApi(client, PODS);
  const otherInstances = new OtherInstances({ settings, list: (namespace, opts, signal) => pods.list(namespace, opts, signal), metrics, logger });
  const looking = controller.waitForSync(shutdown.stop).then(async () => {
    if (shutdown.stop.aborted) return;
    // setImmediate: the list's last page stays referenced until the reflector moves on to its watch.
    setImmediate(() => releaseListMemory(logger));
    await otherInstances.run(shutdown.stop);
  });
  const stopGivingBack = giveBackPeriodically(GIVE_BACK_EVERY_MS, (ms, before) =>
    logger.debug({ ms: ms === null ? null : Math.round(ms), heapUsedBytes: before.used, heapTotalBytes: before.total }, 'gave back heap that V8 kept beyond what is in use'),
  );
  shutdown.stop.addEventListener('abort', stopGivingBack, { once: true });
  shutdown.stop.addEventListener('abort', boundHeapGrowth(HEAP_CHECK_EVERY_MS, HEAP_GROWTH_BYTES), { once: true });
  const leaseClient = settings.leaderElect ? leaderElectionClient(transport, metrics) : null;
  const work = leaseClient !== null ? leadWhenElected(settings, controller, leaseClient, metrics, logger, shutdown) : leadAlone(controller, metrics, shutdown);

  await Promise.all([caches, work, looking]);
  // Events still pending get a few seconds (none once the shutdown timeout has run out).
  await events.close(shutdown.abort.aborted ? 0 : Math.min(EVENTS_CLOSE_MS, settings.shutdownTimeoutMs));
  await closeAll(servers);
  client.close();
  leaseClient?.close();
  shutdown.dispose();
  logger.info({}, 'controller stopped');
  return finish(logger, exitCode);
}

/**
 * ownerSettingsAtStart proves the owner settings before anything is watched: the exit code when
 * discovery refuses them, else whether they are proven. A discovery that cannot be read yet (the
 * API server unreachable) is left to the controller, which checks again until it can.
 */
async function ownerSettingsAtStart(client: ApiClient, settings: Settings, logger: Logger): Promise<boolean | number> {
  try {
    return await proveAtStart(client, settings.owner);
  } catch (err) {
    if (err instanceof OwnerSettingsRefused) {
      logger.error({ err: err.message }, 'refusing the owner settings');
      return EXIT.badConfig;
    }
    return false;
  }
}

/**
 * stopWhenConfigChanges begins a shutdown, as SIGTERM would, once the config file's text differs
 * from the text the settings were built from and would start (a change made while the controller
 * was starting counts too); an invalid one leaves it running (config-reload.ts), and so do owner
 * settings that discovery refuses, which the restart would exit 2 on.
 */
function stopWhenConfigChanges(configFile: WatchedConfig | null, settings: Settings, client: ApiClient, shutdown: Shutdown, metrics: Metrics, logger: Logger): void {
  if (configFile === null) return;
  const vet = async (next: Settings): Promise<Error | null> => {
    if (sameOwner(next.owner, settings.owner)) return null;
    try {
      await proveAtStart(client, next.owner, shutdown.stop);
      return null;
    } catch (err) {
      return err instanceof OwnerSettingsRefused ? err : null;
    }
  };
  const reload = new ConfigReload({ config: configFile, metrics, logger, restart: () => shutdown.begin(settings.shutdownTimeoutMs), vet });
  const stopWatching = watchConfigFile(configFile.path, configFile.text, (text) => void reload.changed(text));
  shutdown.stop.addEventListener('abort', stopWatching, { once: true });
}

const sameOwner = (a: Settings['owner'], b: Settings['owner']): boolean => a.group === b.group && a.version === b.version && a.resource === b.resource && a.kind === b.kind;

async function leadAlone(controller: Controller, metrics: Metrics, shutdown: Shutdown): Promise<void> {
  metrics.setLeader(true);
  await controller.lead(shutdown.stop, shutdown.abort);
  metrics.setLeader(false);
}

/**
 * leadWhenElected campaigns, leads while it holds the Lease, and campaigns again after losing it.
 * `leaseClient` is the Lease's own client, outside the API budget (see leaderElectionClient).
 * The end of a term stops the work and cancels what is in flight, as a shutdown's abort does: a
 * deposed leader's removals would otherwise go on beside its successor's.
 */
export async function leadWhenElected(
  settings: Settings,
  controller: Pick<Controller, 'lead'>,
  leaseClient: LeaseApi,
  metrics: Pick<Metrics, 'setLeader'>,
  logger: Logger,
  shutdown: Pick<Shutdown, 'stop' | 'abort'>,
): Promise<void> {
  const lease = `${settings.leaderElectionNamespace}/${settings.leaderElectionId}`;
  metrics.setLeader(false, lease);
  while (!shutdown.stop.aborted) {
    const elector = electorFor(settings, leaseClient, logger, {
      onStartedLeading: async (term) => {
        metrics.setLeader(true, lease);
        await controller.lead(AbortSignal.any([term, shutdown.stop]), AbortSignal.any([term, shutdown.abort]));
      },
      onStoppedLeading: () => metrics.setLeader(false, lease),
    });
    await elector.run(shutdown.stop);
    if (shutdown.stop.aborted) await elector.release();
  }
}

function electorFor(settings: Settings, client: LeaseApi, logger: Logger, hooks: { onStartedLeading(signal: AbortSignal): Promise<void>; onStoppedLeading(): void }): LeaseElector {
  return new LeaseElector({
    api: client,
    namespace: settings.leaderElectionNamespace,
    name: settings.leaderElectionId,
    identity: defaultIdentity(),
    leaseDurationMs: settings.leaseDurationMs,
    renewDeadlineMs: settings.renewDeadlineMs,
    retryPeriodMs: settings.retryPeriodMs,
    logger,
    ...hooks,
  });
}

/** releaseListMemory frees what the initial lists left behind (see release-memory.ts). */
function releaseListMemory(logger: Logger): void {
  const ms = releaseMemory();
  if (ms === null) logger.debug({}, 'cannot run a garbage collection after the initial list: V8 did not expose gc');
  else logger.debug({ ms: Math.round(ms) }, 'ran one garbage collection after the initial list');
}

async function closeAll(servers: Array<Serving | null>): Promise<void> {
  await Promise.all(servers.map(async (s) => s?.close()));
}

async function finish(logger: Logger, code: number): Promise<number> {
  await logger.flush();
  return code;
}
