// Which Node runs the command. npm only warns (EBADENGINE) when a package's engines exclude the
// Node it installs under, and on Node 20 the dependencies then fail at import (client-node 2.x's
// undici 8 needs 22.19), deep inside and unreadably. So the entry checks first, with nothing
// loaded yet, and says in one line what is needed. Plain, old syntax: it must run on Node 20.

/** ENGINES is package.json's engines.node; a test keeps the two equal. */
export const ENGINES = '^22.19.0 || >=24';

/** nodeSupported tells whether a Node version (process.versions.node) satisfies ENGINES. */
export function nodeSupported(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map((n) => Number.parseInt(n, 10));
  return (major === 22 && minor >= 19) || major >= 24;
}
