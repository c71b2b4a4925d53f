import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMetricsText, type Sample } from './metrics-text.ts';

const CASES: { name: string; text: string; want: Sample[] }[] = [
  { name: 'comments and blank lines are skipped', text: '# HELP x y\n# TYPE x gauge\n\n', want: [] },
  { name: 'a series without labels', text: 'finalizer_sweeper_leader 1', want: [{ name: 'finalizer_sweeper_leader', labels: {}, value: 1 }] },
  {
    name: 'labels, a timestamp dropped',
    text: 'finalizer_sweeper_ready{check="caches-synced"} 0 1700000000000',
    want: [{ name: 'finalizer_sweeper_ready', labels: { check: 'caches-synced' }, value: 0 }],
  },
  {
    name: 'escaped quotes, backslashes and newlines in a label value, and a comma inside it',
    text: 'm{a="x\\"y",b="c\\\\d",c="e\\nf",d="g,h"} 2.5',
    want: [{ name: 'm', labels: { a: 'x"y', b: 'c\\d', c: 'e\nf', d: 'g,h' }, value: 2.5 }],
  },
  { name: 'a trailing comma in the labels', text: 'm{a="1",} 3', want: [{ name: 'm', labels: { a: '1' }, value: 3 }] },
  { name: '+Inf', text: 'h_bucket{le="+Inf"} +Inf', want: [{ name: 'h_bucket', labels: { le: '+Inf' }, value: Infinity }] },
  { name: 'an unterminated label set is skipped, the next line kept', text: 'm{a="1 4\nn 5', want: [{ name: 'n', labels: {}, value: 5 }] },
  { name: 'a value that is no number is skipped', text: 'm abc', want: [] },
];

for (const c of CASES) {
  test(`parseMetricsText: ${c.name}`, () => {
    assert.deepEqual(parseMetricsText(c.text), c.want);
  });
}
