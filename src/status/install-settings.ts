// The settings an install runs with, read as its container reads them: the container's args as
// flags, its environment, and the config file --config (or FINALIZER_SWEEPER_CONFIG) names, found
// in the ConfigMap volume mounted at that path. Resolved by the same resolveSettings as the
// controller's start, so that the selector and instance ID status reports are those the running
// controller uses. Pure: the ConfigMap's text is read by the caller.

import yargs from 'yargs';
import { defineControllerOptions, resolveSettings } from '../config/index.ts';
import { unknownVariables } from '../config/environment.ts';
import { configPath } from '../config/load.ts';
import { parseConfigText } from '../config/file.ts';
import type { Settings } from '../config/settings.ts';
import type { FoundInstall } from './find-installs.ts';

/** ConfigSource is where the config file of a container comes from: a key of a ConfigMap in the install's namespace. */
export interface ConfigSource {
  path: string;
  configMap: string;
  key: string;
}

/** Launch is the container's command line and environment, as the controller would read them. */
export interface Launch {
  argv: Record<string, unknown>;
  env: Record<string, string>;
  /** The config file and where it lives; null when none is named. */
  config: ConfigSource | null;
  /** What could not be resolved from the Deployment alone, one line each. */
  unresolved: string[];
}

/** launchOf reads the container's flags, environment and config source; a problem is a string. */
export function launchOf(install: FoundInstall): Launch | { problem: string } {
  const { env, unresolved } = containerEnv(install);
  const args = install.container.args ?? [];
  let argv: Record<string, unknown>;
  try {
    argv = defineControllerOptions(yargs(args[0] === 'controller' ? args.slice(1) : args))
      .strict()
      .parserConfiguration({ 'camel-case-expansion': false })
      .exitProcess(false)
      .help(false)
      .version(false)
      .fail((message, err) => {
        throw err ?? new Error(message);
      })
      .parseSync() as Record<string, unknown>;
  } catch (err) {
    return { problem: `the container's args do not parse: ${err instanceof Error ? err.message : String(err)}` };
  }
  let path;
  try {
    path = configPath({ argv, env });
  } catch (err) {
    return { problem: err instanceof Error ? err.message : String(err) };
  }
  if (path === null) return { argv, env, config: null, unresolved };
  const config = configSource(install, path.path);
  if ('problem' in config) return { argv, env, config: null, unresolved: [...unresolved, config.problem] };
  return { argv, env, config, unresolved };
}

/** settingsOf resolves the settings from a launch and its config file's text (null: not read); a problem is a string. */
export function settingsOf(launch: Launch, configText: string | null): Settings | { problem: string } {
  // The CLI refuses an unknown variable before it loads anything (a misspelt key of the settings ConfigMap).
  const unknown = unknownVariables(launch.env);
  if (unknown !== null) return { problem: unknown.replaceAll('\n', '; ') };
  try {
    const file = launch.config === null || configText === null ? null : parseConfigText(configText, launch.config.path);
    return resolveSettings({ argv: launch.argv, env: launch.env, command: 'controller', file });
  } catch (err) {
    return { problem: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * containerEnv resolves the container's environment: literal values, and metadata.namespace, the
 * one field reference our routes use (the Lease's namespace, the namespaced route's scope). Any
 * other reference (a pod's name, a Secret) is left unresolved and said so.
 */
export function containerEnv(install: Pick<FoundInstall, 'container' | 'namespace'>): { env: Record<string, string>; unresolved: string[] } {
  const env: Record<string, string> = {};
  const unresolved: string[] = [];
  for (const e of install.container.env ?? []) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    if (e.valueFrom === undefined) env[e.name] = e.value ?? '';
    else if (field === 'metadata.namespace') env[e.name] = install.namespace;
    else if (e.name.startsWith('FINALIZER_SWEEPER_')) unresolved.push(`env ${e.name}: its valueFrom is not read; the settings assume it unset`);
  }
  if ((install.container.envFrom ?? []).length > 0) unresolved.push('envFrom is not read; the settings assume none of its variables');
  return { env, unresolved };
}

/** configSource finds the ConfigMap key mounted at `path`: the volume mounted at a parent directory, and the key its items map to the rest of the path. */
export function configSource(install: Pick<FoundInstall, 'container' | 'volumes'>, path: string): ConfigSource | { problem: string } {
  const mounts = (install.container.volumeMounts ?? []).filter((m) => m.subPath === undefined && path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
  // The deepest mount wins, as in the container's filesystem.
  const mount = mounts.sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  if (mount === undefined) return { problem: `the config file ${path} lies in no volume mounted by the container` };
  const volume = install.volumes.find((v) => v.name === mount.name);
  if (volume?.configMap === undefined) return { problem: `the config file ${path} lies in volume ${mount.name}, which is not a ConfigMap` };
  const rest = path.slice(mount.mountPath.replace(/\/$/, '').length + 1);
  const items = volume.configMap.items;
  const key = items === undefined ? rest : items.find((i) => i.path === rest)?.key;
  if (key === undefined) return { problem: `ConfigMap ${volume.configMap.name} maps no key to ${rest}` };
  return { path, configMap: volume.configMap.name, key };
}
