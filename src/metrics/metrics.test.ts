import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../config/settings.ts';
import { Metrics } from './metrics.ts';

/** sample returns the value of one series from the text exposition, or undefined if absent. */
async function sample(m: Metrics, series: string): Promise<number | undefined> {
  const text = await m.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('two Metrics in one process register the same names without clashing', () => {
  // prom-client throws "already registered" when a name is registered twice in one registry.
  assert.doesNotThrow(() => [new Metrics({ version: 'a' }), new Metrics({ version: 'b' })]);
});

test('the workqueue metrics use client-go names with name="pod_cleanup"', async () => {
  const m = new Metrics({ version: 'test' });
  m.queue.added(0);
  m.queue.added(2);
  m.queue.depthChanged(2, 9);
  m.queue.depthChanged(2, 7);
  m.queue.depthChanged(5, 1);
  m.queue.queued(0.002);
  m.queue.worked(0.5);
  m.queue.retried();
  assert.equal(await sample(m, 'workqueue_adds_total{name="pod_cleanup"}'), 2);
  assert.equal(await sample(m, 'workqueue_depth{name="pod_cleanup",priority="2"}'), 7);
  assert.equal(await sample(m, 'workqueue_depth{name="pod_cleanup",priority="5"}'), 1);
  assert.equal(await sample(m, 'workqueue_queue_duration_seconds_count{name="pod_cleanup"}'), 1);
  assert.equal(await sample(m, 'workqueue_work_duration_seconds_bucket{le="1",name="pod_cleanup"}'), 1);
  assert.equal(await sample(m, 'workqueue_retries_total{name="pod_cleanup"}'), 1);
});

test('the work duration buckets are client-go\'s, from 1e-8 to 10 seconds', async () => {
  const m = new Metrics({ version: 'test' });
  m.queue.worked(1);
  const text = await m.registry.metrics();
  const les = [...text.matchAll(/workqueue_work_duration_seconds_bucket\{le="([^"]+)"/g)].map((x) => x[1]);
  assert.deepEqual(les, ['1e-8', '1e-7', '0.000001', '0.00001', '0.0001', '0.001', '0.01', '0.1', '1', '10', '+Inf']);
});

test('the in-progress gauges read their source at scrape time', async () => {
  const m = new Metrics({ version: 'test' });
  let unfinished = 1.5;
  m.queue.trackProgress({ unfinishedWorkSeconds: () => unfinished, longestRunningProcessorSeconds: () => 1, inFlight: () => 3 });
  assert.equal(await sample(m, 'workqueue_unfinished_work_seconds{name="pod_cleanup"}'), 1.5);
  unfinished = 4;
  assert.equal(await sample(m, 'workqueue_unfinished_work_seconds{name="pod_cleanup"}'), 4);
  assert.equal(await sample(m, 'workqueue_longest_running_processor_seconds{name="pod_cleanup"}'), 1);
  assert.equal(await sample(m, 'controller_runtime_active_workers{controller="pod_cleanup"}'), 3);
});

test('Terminating pods by why they wait, and the oldest\'s age, are read from their source at scrape time, one pass per scrape', async () => {
  const m = new Metrics({ version: 'test' });
  let passes = 0;
  m.trackTerminating(() => {
    passes++;
    return { 'owner-alive-unrecorded': { count: 4, oldestSeconds: 120 }, 'owner-alive-offloaded': { count: 1, oldestSeconds: 60 }, unattributable: { count: 0, oldestSeconds: 0 }, queued: { count: 2, oldestSeconds: 3 }, 'dry-run': { count: 5, oldestSeconds: 30 } };
  });
  const text = await m.registry.metrics();
  assert.equal(passes, 1);
  const value = (series: string) => Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.split(' ')[1]);
  assert.equal(value('finalizer_sweeper_terminating_pods{reason="owner-alive-unrecorded"}'), 4);
  assert.equal(value('finalizer_sweeper_terminating_pods{reason="queued"}'), 2);
  assert.equal(value('finalizer_sweeper_terminating_pods{reason="owner-alive-offloaded"}'), 1);
  assert.equal(value('finalizer_sweeper_terminating_pods{reason="dry-run"}'), 5);
  assert.equal(value('finalizer_sweeper_oldest_terminating_pod_age_seconds{reason="owner-alive-unrecorded"}'), 120);
  assert.equal(value('finalizer_sweeper_oldest_terminating_pod_age_seconds{reason="unattributable"}'), 0);
});

test('client-go\'s names sit beside ours: rest_client_requests_total by code, method and host, leader_election_master_status by lease', async () => {
  const m = new Metrics({ version: 'test' });
  m.apiHost('127.0.0.1:6443');
  m.apiRequest('patch', 429, 0.01, 'pods');
  m.apiRequest('list', 200, 0.01, 'workflows');
  m.setLeader(true, 'argo/finalizer-sweeper');
  assert.equal(await sample(m, 'rest_client_requests_total{code="429",method="PATCH",host="127.0.0.1:6443"}'), 1);
  assert.equal(await sample(m, 'rest_client_requests_total{code="200",method="GET",host="127.0.0.1:6443"}'), 1);
  assert.equal(await sample(m, 'leader_election_master_status{name="argo/finalizer-sweeper"}'), 1);
  m.setLeader(false, 'argo/finalizer-sweeper');
  assert.equal(await sample(m, 'leader_election_master_status{name="argo/finalizer-sweeper"}'), 0);
});

test('a 403 is counted by verb and cause beside the request itself, so that an alert can leave out the namespace being deleted', async () => {
  const m = new Metrics({ version: 'test' });
  m.apiRequest('create', 403, 0.01, 'events');
  m.apiForbidden('create', 'namespace-terminating');
  m.apiRequest('list', 403, 0.01, 'workflows');
  m.apiForbidden('list', 'denied');
  assert.equal(await sample(m, 'finalizer_sweeper_api_requests_total{verb="create",resource="events",code="403"}'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_api_forbidden_total{verb="create",cause="namespace-terminating"}'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_api_forbidden_total{verb="list",cause="denied"}'), 1);
});

test('a removal is counted by reason and result, and a stale one also as forced', async () => {
  const m = new Metrics({ version: 'test' });
  m.removal('owner-gone', 'removed');
  m.removal('stale', 'removed');
  m.removal('stale', 'dry_run');
  assert.equal(await sample(m, 'finalizer_sweeper_removals_total{reason="owner-gone",result="removed"}'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_removals_total{reason="stale",result="dry_run"}'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_forced_removals_total'), 1);
});

test('pods_waiting replaces the previous counts and reports absent reasons as 0', async () => {
  const m = new Metrics({ version: 'test' });
  m.podsWaiting({ unattributable: 3, 'owner-alive-unrecorded': 5 });
  m.podsWaiting({ 'owner-alive-unrecorded': 2 });
  assert.equal(await sample(m, 'finalizer_sweeper_pods_waiting{reason="owner-alive-unrecorded"}'), 2);
  assert.equal(await sample(m, 'finalizer_sweeper_pods_waiting{reason="unattributable"}'), 0);
});

test('an API request is counted by verb, resource and code and timed by verb', async () => {
  const m = new Metrics({ version: 'test' });
  m.apiRequest('patch', 200, 0.01, 'pods');
  m.apiRequest('patch', 409, 0.02, 'pods');
  m.apiRequest('get', 'error', 1, 'workflows');
  m.apiRequest('get', 200, 0.01, 'namespaces');
  m.apiRequest('get', 200, 0.01, 'namespaces');
  assert.equal(await sample(m, 'finalizer_sweeper_api_requests_total{verb="patch",resource="pods",code="409"}'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_api_requests_total{verb="get",resource="workflows",code="error"}'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_api_requests_total{verb="get",resource="namespaces",code="200"}'), 2);
  assert.equal(await sample(m, 'finalizer_sweeper_api_request_duration_seconds_count{verb="patch"}'), 2);
});

test('repeated API requests add up on their series, and a new API host gets series of its own', async () => {
  const m = new Metrics({ version: 'test' });
  m.apiHost('a:6443');
  for (let i = 0; i < 3; i++) m.apiRequest('patch', 200, 0.01, 'pods');
  m.apiHost('b:6443');
  m.apiRequest('patch', 200, 0.01, 'pods');
  assert.equal(await sample(m, 'finalizer_sweeper_api_requests_total{verb="patch",resource="pods",code="200"}'), 4);
  assert.equal(await sample(m, 'finalizer_sweeper_api_request_duration_seconds_count{verb="patch"}'), 4);
  assert.equal(await sample(m, 'rest_client_requests_total{code="200",method="PATCH",host="a:6443"}'), 3);
  assert.equal(await sample(m, 'rest_client_requests_total{code="200",method="PATCH",host="b:6443"}'), 1);
});

test('seconds_since_last_watch_event is computed from the clock at scrape time', async () => {
  let now = 10_000;
  const m = new Metrics({ version: 'test', now: () => now });
  m.watchEvent('pods');
  now = 12_500;
  assert.equal(await sample(m, 'finalizer_sweeper_seconds_since_last_watch_event{resource="pods"}'), 2.5);
  m.watchEvent('pods');
  assert.equal(await sample(m, 'finalizer_sweeper_seconds_since_last_watch_event{resource="pods"}'), 0);
});

test('cached_objects reads each tracked cache size at scrape time', async () => {
  const m = new Metrics({ version: 'test' });
  const pods = new Map([['a', 1], ['b', 2]]);
  m.trackCache('pods', () => pods.size);
  assert.equal(await sample(m, 'finalizer_sweeper_cached_objects{resource="pods"}'), 2);
  pods.delete('a');
  assert.equal(await sample(m, 'finalizer_sweeper_cached_objects{resource="pods"}'), 1);
});

test('leader starts at 0 and follows setLeader', async () => {
  const m = new Metrics({ version: 'test' });
  assert.equal(await sample(m, 'finalizer_sweeper_leader'), 0);
  m.setLeader(true);
  assert.equal(await sample(m, 'finalizer_sweeper_leader'), 1);
});

test('build_info carries the version and the Node version', async () => {
  const m = new Metrics({ version: '1.2.3' });
  assert.equal(await sample(m, `finalizer_sweeper_build_info{version="1.2.3",node_version="${process.version}"}`), 1);
});

test('config_info shows the settings that shape behaviour, "*" for all namespaces', async () => {
  const m = new Metrics({ version: 'test' });
  m.recordConfig({ ...DEFAULTS, forceAfterMs: 600_000 });
  const series = 'finalizer_sweeper_config_info{workers="8",api_budget_mode="auto",qps="unset",burst="unset",resync_period="300s",'
    + 'force_after="600s",dry_run="false",namespaces="*",finalizer="workflows.argoproj.io/status"}';
  assert.equal(await sample(m, series), 1);
});

test('config_info shows a QPS and burst as given', async () => {
  const m = new Metrics({ version: 'test' });
  m.recordConfig({ ...DEFAULTS, kubeApiBudgetMode: 'qps', kubeApiQps: 2.5, kubeApiBurst: 5 });
  assert.match(await m.registry.metrics(), /^finalizer_sweeper_config_info\{workers="8",api_budget_mode="qps",qps="2.5",burst="5",/m);
});

test('api_budget_info shows the budget in force, replacing what it showed before, and the concurrency limit', async () => {
  const m = new Metrics({ version: 'test' });
  m.apiBudget({ mode: 'auto', rate: { qps: 100, burst: 200 }, maxConcurrency: 11, concurrency: 11 });
  m.apiBudget({ mode: 'auto', rate: null, maxConcurrency: 11, concurrency: 5 });
  const text = await m.registry.metrics();
  assert.equal(await sample(m, 'finalizer_sweeper_api_budget_info{mode="auto",limit="apf",qps="none",burst="none",max_concurrency="11"}'), 1);
  assert.doesNotMatch(text, /api_budget_info\{[^}]*limit="qps"/);
  assert.equal(await sample(m, 'finalizer_sweeper_api_concurrency_limit'), 5);
});

test('the default process metrics are in the same registry', async () => {
  const m = new Metrics({ version: 'test' });
  const text = await m.registry.metrics();
  assert.match(text, /^process_resident_memory_bytes /m);
  assert.match(text, /^nodejs_eventloop_lag_seconds /m);
});

test('ready{check} follows each readiness check at every scrape', async () => {
  const m = new Metrics({ version: 'test' });
  let synced = false;
  m.trackReadiness({ 'caches-synced': () => synced, watches: () => true });
  assert.equal(await sample(m, 'finalizer_sweeper_ready{check="caches-synced"}'), 0);
  assert.equal(await sample(m, 'finalizer_sweeper_ready{check="watches"}'), 1);
  synced = true;
  assert.equal(await sample(m, 'finalizer_sweeper_ready{check="caches-synced"}'), 1);
});

test('list_watch_failures_total counts by resource, attempt and code', async () => {
  const m = new Metrics({ version: 'test' });
  m.listWatchFailure('pods', 'list', '504');
  m.listWatchFailure('pods', 'list', '504');
  m.listWatchFailure('workflows', 'watch', '<stalled>');
  assert.equal(await sample(m, 'finalizer_sweeper_list_watch_failures_total{resource="pods",attempt="list",code="504"}'), 2);
  assert.equal(await sample(m, 'finalizer_sweeper_list_watch_failures_total{resource="workflows",attempt="watch",code="<stalled>"}'), 1);
});

test('config_last_reload_successful starts at 1; a refused change sets it to 0 and is counted, a good text back sets it to 1', async () => {
  const m = new Metrics({ version: 'test' });
  assert.equal(await sample(m, 'finalizer_sweeper_config_last_reload_successful'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_config_reload_failures_total'), 0);
  m.configReload(false);
  assert.equal(await sample(m, 'finalizer_sweeper_config_last_reload_successful'), 0);
  assert.equal(await sample(m, 'finalizer_sweeper_config_reload_failures_total'), 1);
  m.configReload(true);
  assert.equal(await sample(m, 'finalizer_sweeper_config_last_reload_successful'), 1);
  assert.equal(await sample(m, 'finalizer_sweeper_config_reload_failures_total'), 1);
});

test('other_instance_pods is replaced by each look: an instance ID no longer found goes', async () => {
  const m = new Metrics({ version: 'test' });
  m.otherInstancePods(new Map([['prod', 500], ['<none>', 3]]));
  assert.equal(await sample(m, 'finalizer_sweeper_other_instance_pods{instance_id="prod"}'), 500);
  assert.equal(await sample(m, 'finalizer_sweeper_other_instance_pods{instance_id="<none>"}'), 3);
  m.otherInstancePods(new Map([['prod', 7]]));
  assert.equal(await sample(m, 'finalizer_sweeper_other_instance_pods{instance_id="prod"}'), 7);
  assert.equal(await sample(m, 'finalizer_sweeper_other_instance_pods{instance_id="<none>"}'), undefined);
});
