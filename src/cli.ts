#!/usr/bin/env node
// The `finalizer-sweeper` command. It checks the Node version before loading anything else (see
// node-support.ts), then runs the command line (command-line.ts).
// Exit codes: 0 done, 1 some removals failed (sweep), or what explain and status report is not
// well (a pod stuck, an install not working), 2 bad flags or configuration (or a Node it cannot run
// on), 3 the API server cannot be reached or refuses us, 4 no install found (status), 130 interrupted.

import { EXIT } from './commands/exit-codes.ts';
import { ENGINES, nodeSupported } from './node-support.ts';

if (nodeSupported(process.versions.node)) {
  await import('./command-line.ts');
} else {
  process.stderr.write(`finalizer-sweeper: needs Node ${ENGINES} (Node 24 LTS recommended); this is Node ${process.versions.node}\n`);
  process.exitCode = EXIT.badConfig;
}
