import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBindAddress } from './bind-address.ts';

test('":8080" listens on every interface', () => {
  assert.deepEqual(parseBindAddress(':8080'), { host: null, port: 8080 });
});

test('"127.0.0.1:0" asks for an ephemeral port on loopback', () => {
  assert.deepEqual(parseBindAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
});

test('a bracketed IPv6 host loses its brackets', () => {
  assert.deepEqual(parseBindAddress('[::1]:9000'), { host: '::1', port: 9000 });
});

test('a host name is kept as written', () => {
  assert.deepEqual(parseBindAddress('localhost:8081'), { host: 'localhost', port: 8081 });
});

test('"0", "" and blanks disable the server', () => {
  for (const off of ['0', '', '  ']) assert.equal(parseBindAddress(off), null, JSON.stringify(off));
});

test('a bare port is refused with a hint, as Go refuses it', () => {
  assert.throws(() => parseBindAddress('8080'), /invalid bind address "8080": missing port; want HOST:PORT or :PORT/);
});

test('a port outside 0-65535 or not a number is refused', () => {
  for (const bad of [':65536', ':http', ':', ':-1', '127.0.0.1:80a']) {
    assert.throws(() => parseBindAddress(bad), /is not 0-65535/, bad);
  }
});

test('an unbracketed IPv6 host is refused', () => {
  assert.throws(() => parseBindAddress('::1:8080'), /an IPv6 host needs brackets/);
});

test('a URL is refused rather than misread as a host', () => {
  assert.throws(() => parseBindAddress('http://0.0.0.0:8080'), /host "http:\/\/0.0.0.0" is not a host name/);
});
