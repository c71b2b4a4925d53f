// VERSION is the product's version, from package.json (build_info, logs, the User-Agent). It is
// read at run time, not imported, so that src/ and the compiled dist/ (both one level below the
// package root) find the same file and the compiler need not copy package.json into dist/.
import { createRequire } from 'node:module';

const pkg = createRequire(import.meta.url)('../package.json') as { version: string };

export const VERSION: string = pkg.version;
