import { test } from 'node:test';
import assert from 'node:assert/strict';
import { duplicateKeys } from './strict-json.ts';

const cases: Array<[string, string, string[]]> = [
  ['no duplicates', '{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}', []],
  ['a duplicate at the top', '{"resource":"workflows","x":1,"resource":"workflows"}', ['resource']],
  ['a duplicate inside a nested object', '{"err":{"type":"E","type":"F"}}', ['err.type']],
  ['a duplicate inside an object in an array', '{"list":[{"a":1,"a":2}]}', ['list.[].a']],
  ['keys and strings with quotes, commas and braces', '{"a\\"b":"x,\\"{y}","c":"}","a\\"b":1}', ['a"b']],
  ['string values are not keys', '{"a":"a","b":"a"}', []],
];
for (const [what, text, want] of cases) {
  test(`duplicateKeys: ${what}`, () => assert.deepEqual(duplicateKeys(text), want));
}
