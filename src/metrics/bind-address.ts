// Bind addresses follow controller-runtime's flags (--metrics-bind-address, --health-probe-bind-address):
// Go's "host:port", where an empty host means every interface, and "0" switches the server off.

/** BindAddress is where a server listens; host null means every interface. Port 0 is ephemeral. */
export interface BindAddress {
  host: string | null;
  port: number;
}

/**
 * parseBindAddress reads ":8080" (every interface), "127.0.0.1:0" (an ephemeral port),
 * "[::1]:9000" (IPv6), or "0" / "" (disabled: null). Anything else throws an Error that says
 * what is expected.
 */
export function parseBindAddress(text: string): BindAddress | null {
  const s = text.trim();
  if (s === '' || s === '0') return null;
  const bad = (why: string): Error =>
    new Error(`invalid bind address "${text}": ${why}; want HOST:PORT or :PORT (e.g. ":8080"), or "0" to disable`);

  const colon = s.lastIndexOf(':');
  if (colon < 0) throw bad('missing port');
  let host = s.slice(0, colon);
  const portText = s.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) throw bad(`port "${portText}" is not 0-65535`);

  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  else if (/[\s/[\]]/.test(host)) throw bad(`host "${host}" is not a host name or IP address`);
  else if (host.includes(':')) throw bad('an IPv6 host needs brackets');
  return { host: host === '' ? null : host, port: Number(portText) };
}
