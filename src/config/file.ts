// The config file layer: reading is isolated here so that everything else is pure.
import { readFile } from 'node:fs/promises';
import { loadAll, YAMLException } from 'js-yaml';
import type { Source } from './errors.ts';
import { ConfigError } from './errors.ts';

/** ConfigFile is a parsed config file: a mapping of config-file keys to YAML values. */
export interface ConfigFile {
  path: string;
  values: Record<string, unknown>;
  /** text is the file as read: what the controller compares the file with to see it change. */
  text: string;
}

/** ConfigPath is the file to read and which layer named it (for error messages). */
export interface ConfigPath {
  path: string;
  source: Source;
}

/** readConfigFile reads and parses the file; every failure is a ConfigError. */
export async function readConfigFile(where: ConfigPath): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(where.path, 'utf8');
  } catch (err) {
    throw new ConfigError({
      key: 'config',
      source: where.source,
      where: where.source === 'flag' ? '--config' : 'FINALIZER_SWEEPER_CONFIG',
      value: where.path,
      problem: `cannot read the file (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      allowed: 'the path of a readable YAML file',
    });
  }
  return parseConfigText(text, where.path);
}

/** parseConfigText parses YAML text that must hold one mapping (or nothing, meaning no settings). */
export function parseConfigText(text: string, path: string): ConfigFile {
  let documents: unknown[];
  try {
    documents = loadAll(text, { filename: path });
  } catch (err) {
    if (!(err instanceof YAMLException)) throw err;
    const at = err.mark ? ` at line ${err.mark.line + 1}, column ${err.mark.column + 1}` : '';
    const line = err.mark ? text.split('\n')[err.mark.line] : undefined;
    throw fileError(path, line, `malformed YAML${at}: ${err.reason}`);
  }
  if (documents.length > 1) throw fileError(path, undefined, `${documents.length} YAML documents`);
  const values = documents[0] ?? {};
  if (values === null || typeof values !== 'object' || Array.isArray(values)) {
    throw fileError(path, values, `not a mapping (found ${Array.isArray(values) ? 'a list' : typeof values})`);
  }
  return { path, values: values as Record<string, unknown>, text };
}

function fileError(path: string, value: unknown, problem: string): ConfigError {
  return new ConfigError({
    key: 'config',
    source: 'file',
    where: path,
    value,
    problem,
    allowed: 'one YAML mapping of config-file keys, as in config/finalizer-sweeper.yaml',
  });
}
