import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { dnsLabelProblem, dnsSubdomainProblem, labelSelectorProblem, qualifiedNameProblem } from './names.ts';

describe('labelSelectorProblem', () => {
  const sane = [
    '',
    'workflows.argoproj.io/workflow',
    '!workflows.argoproj.io/completed',
    'app=web',
    'app==web',
    'app!=web',
    'app=',
    'env in (prod, staging)',
    'env notin (dev),tier',
    'a=b, c!=d , e',
  ];
  for (const selector of sane) {
    test(`accepts ${JSON.stringify(selector)}`, () => assert.equal(labelSelectorProblem(selector), null));
  }
  const broken = ['a,', ',a', 'a=b=c', 'in (a)', 'env in (a', 'Bad Key', 'a=b c', '-a=b', 'a/b/c', 'app=web!'];
  for (const selector of broken) {
    test(`rejects ${JSON.stringify(selector)}`, () => assert.notEqual(labelSelectorProblem(selector), null));
  }
});

describe('qualifiedNameProblem', () => {
  test('accepts a prefixed name', () => assert.equal(qualifiedNameProblem('workflows.argoproj.io/status'), null));
  test('accepts a bare name', () => assert.equal(qualifiedNameProblem('status'), null));
  test('rejects an upper-case prefix', () => assert.notEqual(qualifiedNameProblem('Argo.io/status'), null));
  test('rejects an empty name part', () => assert.notEqual(qualifiedNameProblem('argoproj.io/'), null));
  test('rejects a name part of 64 characters', () => assert.notEqual(qualifiedNameProblem(`a/${'x'.repeat(64)}`), null));
});

describe('DNS names', () => {
  test('a label may hold digits and inner dashes', () => assert.equal(dnsLabelProblem('team-1'), null));
  test('a label may not hold dots', () => assert.notEqual(dnsLabelProblem('a.b'), null));
  test('a label may not end with a dash', () => assert.notEqual(dnsLabelProblem('a-'), null));
  test('a subdomain may hold dots', () => assert.equal(dnsSubdomainProblem('argoproj.io'), null));
  test('a subdomain may not hold an empty label', () => assert.notEqual(dnsSubdomainProblem('argoproj..io'), null));
});
