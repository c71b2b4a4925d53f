// What ships is src/ compiled to dist/ (`npm run build`, tsconfig.build.json): the benchmark runs
// that, never the TypeScript sources, because Node's type stripping loads a compiler of its own and
// the figures (memory above all) would not be the product's. compiledCli builds dist/ first when
// it is missing or older than what it is compiled from.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'dist', 'cli.js');
/** The inputs of the build: the sources and the files that configure the compiler. */
const INPUTS = [join(ROOT, 'src'), join(ROOT, 'tsconfig.json'), join(ROOT, 'tsconfig.build.json'), join(ROOT, 'package.json')];

let checked = false;

/** compiledCli is the path of dist/cli.js, built now if it is missing or older than its inputs. */
export function compiledCli(log: (message: string) => void = (m) => console.error(m)): string {
  if (checked) return CLI;
  const built = mtimeOf(CLI);
  const newest = Math.max(...INPUTS.map(newestMtime));
  if (built === null || built < newest) {
    log(built === null ? 'dist/cli.js is missing: building (tsc -p tsconfig.build.json)' : 'dist/ is older than src/: building (tsc -p tsconfig.build.json)');
    // tsc rewrites every output file, so dist/cli.js's time is the time of the build.
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  }
  checked = true;
  return CLI;
}

function mtimeOf(path: string): number | null {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

/** newestMtime is the latest modification time of a file, or of any file under a folder. */
function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}
