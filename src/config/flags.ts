// The CLI's flag definitions, generated from KEYS. No flag has a yargs default: an absent
// flag must stay absent so that the environment and the config file can supply the value;
// the default is shown in --help through defaultDescription instead.
import type { Argv, Options } from 'yargs';
import type { Command, SettingSpec } from './keys.ts';
import { CONFIG_KEY, KEYS } from './keys.ts';
import { DEFAULTS } from './settings.ts';

/** defineOptions registers the flags of one command (plus --config) on a yargs instance. */
export function defineOptions<T>(yargs: Argv<T>, command: Command): Argv<T> {
  const options: Record<string, Options> = {
    [CONFIG_KEY.flag]: {
      type: 'string',
      requiresArg: true,
      group: 'Configuration:',
      describe: `YAML config file (see config/finalizer-sweeper.yaml) [env ${CONFIG_KEY.env}]`,
    },
  };
  for (const spec of KEYS.filter((s) => s.commands.includes(command))) options[spec.flag] = option(spec);
  // The flags' types come from a run-time table, so yargs cannot infer them; callers hand
  // argv to loadSettings, which reads every flag as unknown, so keeping T loses nothing.
  return yargs.options(options) as unknown as Argv<T>;
}

/** defineControllerOptions registers the `controller` command's flags. */
export function defineControllerOptions<T>(yargs: Argv<T>): Argv<T> {
  return defineOptions(yargs, 'controller');
}

/** defineSweepOptions registers the `sweep` command's flags. */
export function defineSweepOptions<T>(yargs: Argv<T>): Argv<T> {
  return defineOptions(yargs, 'sweep');
}

/** defineExplainOptions registers the `explain` command's flags. */
export function defineExplainOptions<T>(yargs: Argv<T>): Argv<T> {
  return defineOptions(yargs, 'explain');
}

/**
 * defineStatusOptions registers the `status` command's flags: the cluster, the log and the output.
 * No --config: the settings status reports are the install's, read from the cluster.
 */
export function defineStatusOptions<T>(yargs: Argv<T>): Argv<T> {
  const options: Record<string, Options> = {};
  for (const spec of KEYS.filter((s) => s.commands.includes('status'))) options[spec.flag] = option(spec);
  return yargs.options(options) as unknown as Argv<T>;
}

function option(spec: SettingSpec): Options {
  const shown = spec.show(DEFAULTS);
  return {
    // Numbers and durations are read as strings and parsed by loadSettings, which names
    // the bad value in its error; yargs would turn "abc" into NaN.
    type: spec.boolean ? 'boolean' : 'string',
    requiresArg: !spec.boolean,
    group: spec.group,
    describe: `${spec.describe} [env ${spec.env}]`,
    defaultDescription: shown === '' ? spec.unset : shown,
  };
}
