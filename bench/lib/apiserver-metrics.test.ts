import assert from 'node:assert/strict';
import { test } from 'node:test';
import { histogramMean, histogramQuantile, seatsInUse, serverLoad } from './apiserver-metrics.ts';
import { Scrape } from './prom.ts';

/** patches writes apiserver_request_duration_seconds for pod PATCHes with cumulative bucket counts. */
function patches(buckets: Record<string, number>, sum: number, other = 0): string {
  const lines = Object.entries(buckets).map(([le, n]) => `apiserver_request_duration_seconds_bucket{verb="PATCH",resource="pods",le="${le}"} ${n}`);
  lines.push(`apiserver_request_duration_seconds_bucket{verb="GET",resource="pods",le="+Inf"} ${other}`);
  const count = buckets['+Inf'] ?? 0;
  lines.push(`apiserver_request_duration_seconds_sum{verb="PATCH",resource="pods"} ${sum}`, `apiserver_request_duration_seconds_count{verb="PATCH",resource="pods"} ${count}`);
  return lines.join('\n');
}

test('histogramQuantile reads the bucket that holds the quantile of what was observed between the scrapes', () => {
  const before = new Scrape(patches({ '0.1': 100, '0.5': 100, '1': 100, '+Inf': 100 }, 5, 7));
  // Between the scrapes: 90 within 0.1 s, 8 within 0.5, 1 within 1, 1 beyond.
  const after = new Scrape(patches({ '0.1': 190, '0.5': 198, '1': 199, '+Inf': 200 }, 25, 9));
  const rows: Array<[number, number]> = [
    [0.5, 0.1],
    [0.9, 0.1],
    [0.95, 0.5],
    [0.99, 1],
    [1, Infinity],
  ];
  for (const [q, bound] of rows) assert.equal(histogramQuantile(before, after, 'apiserver_request_duration_seconds', { verb: 'PATCH' }, q), bound, `q ${q}`);
  assert.equal(histogramMean(before, after, 'apiserver_request_duration_seconds', { verb: 'PATCH' }), 0.2);
});

test('histograms that observed nothing between the scrapes give no figure', () => {
  const same = new Scrape(patches({ '0.1': 3, '+Inf': 3 }, 1));
  assert.equal(histogramQuantile(same, same, 'apiserver_request_duration_seconds', { verb: 'PATCH' }, 0.99), null);
  assert.equal(histogramMean(same, same, 'apiserver_request_duration_seconds', { verb: 'PATCH' }), null);
});

test('serverLoad counts APF rejections and waits over the window; seatsInUse sums the levels', () => {
  const text = (rejected: number, waits: number) =>
    [
      `apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="queue-full"} ${rejected}`,
      `apiserver_flowcontrol_rejected_requests_total{flow_schema="global-default",priority_level="global-default",reason="time-out"} 2`,
      `apiserver_flowcontrol_request_wait_duration_seconds_bucket{priority_level="workload-low",le="0.5"} ${waits}`,
      `apiserver_flowcontrol_request_wait_duration_seconds_bucket{priority_level="workload-low",le="+Inf"} ${waits}`,
      `apiserver_flowcontrol_request_wait_duration_seconds_sum{priority_level="workload-low"} ${waits * 0.25}`,
      `apiserver_flowcontrol_request_wait_duration_seconds_count{priority_level="workload-low"} ${waits}`,
      'apiserver_flowcontrol_current_executing_seats{flow_schema="service-accounts",priority_level="workload-low"} 7',
      'apiserver_flowcontrol_current_executing_seats{flow_schema="system-leader-election",priority_level="leader-election"} 1',
      'apiserver_flowcontrol_nominal_limit_seats{priority_level="workload-low"} 24',
      'apiserver_flowcontrol_nominal_limit_seats{priority_level="leader-election"} 10',
    ].join('\n');
  const load = serverLoad(new Scrape(text(5, 10)), new Scrape(text(45, 30)));
  assert.equal(load.rejected, 40);
  assert.equal(load.queueWaitMean, 0.25);
  assert.equal(load.queueWaitP99, 0.5);
  assert.equal(load.patchMean, null);
  assert.deepEqual(seatsInUse(new Scrape(text(0, 0))), { executing: 8, nominal: 34 });
});
