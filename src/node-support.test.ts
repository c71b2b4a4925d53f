import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENGINES, nodeSupported } from './node-support.ts';

const cases: Array<[string, boolean]> = [
  ['20.20.2', false],
  ['22.18.9', false],
  ['22.19.0', true],
  ['22.22.1', true],
  ['23.11.0', false],
  ['24.0.0', true],
  ['24.21.0', true],
  ['26.1.0', true],
];
for (const [version, want] of cases) {
  test(`nodeSupported(${version}) is ${want}`, () => assert.equal(nodeSupported(version), want));
}

test('ENGINES is package.json\'s engines.node', () => {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { engines: { node: string } };
  assert.equal(ENGINES, pkg.engines.node);
});
