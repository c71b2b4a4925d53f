// loadSettings builds the one Settings object: flags > environment > config file > defaults.
// Each layer replaces, never merges: `--namespace a` replaces the file's namespace list.
import type { Source } from './errors.ts';
import { ConfigError, InvalidValue } from './errors.ts';
import type { ConfigFile, ConfigPath } from './file.ts';
import { parseConfigText, readConfigFile } from './file.ts';
import type { Command, SettingSpec } from './keys.ts';
import { CONFIG_KEY, KEYS } from './keys.ts';
import type { Settings } from './settings.ts';
import { DEFAULTS } from './settings.ts';
import { suggestKey } from './suggest.ts';

/** LoadInput is what loadSettings reads: yargs' parsed flags (only those given), the environment, the command. */
export interface LoadInput {
  argv: Readonly<Record<string, unknown>>;
  env: Readonly<Record<string, string | undefined>>;
  command: Command;
}

/** Origin records where a setting's effective value came from, for error messages. */
interface Origin {
  source: Source;
  where: string;
  value: unknown;
}

/** loadSettings reads the config file named by --config or FINALIZER_SWEEPER_CONFIG, then resolves; throws ConfigError. */
export async function loadSettings(input: LoadInput): Promise<Settings> {
  return (await loadSettingsAndFile(input)).settings;
}

/** loadSettingsAndFile is loadSettings that also returns the config file it read, if any, as read. */
export async function loadSettingsAndFile(input: LoadInput): Promise<{ settings: Settings; file: ConfigFile | null }> {
  const where = configPath(input);
  const file = where === null ? null : await readConfigFile(where);
  return { settings: resolveSettings({ ...input, file }), file };
}

/**
 * settingsFromText is loadSettings for a config file's new text, read by the caller: what the
 * settings would be were the command started now with it (a controller checks a changed file so).
 */
export function settingsFromText(input: LoadInput, path: string, text: string): Settings {
  return resolveSettings({ ...input, file: parseConfigText(text, path) });
}

/** configPath returns the config file to read, if any: --config beats FINALIZER_SWEEPER_CONFIG. */
export function configPath(input: Pick<LoadInput, 'argv' | 'env'>): ConfigPath | null {
  const flag = lastOf(input.argv[CONFIG_KEY.flag]);
  if (flag !== undefined) {
    if (typeof flag === 'string' && flag !== '') return { path: flag, source: 'flag' };
    throw new ConfigError({
      key: 'config', source: 'flag', where: '--config', value: flag,
      problem: 'empty path', allowed: 'the path of a YAML config file',
    });
  }
  const env = input.env[CONFIG_KEY.env];
  return env === undefined || env === '' ? null : { path: env, source: 'env' };
}

/** resolveSettings is loadSettings without the file read: pure, for tests and callers that read the file themselves. */
export function resolveSettings(input: LoadInput & { file: Pick<ConfigFile, 'path' | 'values'> | null }): Settings {
  const settings = structuredClone(DEFAULTS);
  const origins = new Map<string, Origin>();
  const set = (spec: SettingSpec, origin: Origin, textual: boolean): void => {
    try {
      spec.apply(settings, origin.value, textual);
    } catch (err) {
      if (err instanceof InvalidValue) throw invalid(spec.key, origin, err.problem, err.allowed, err.hint);
      throw err;
    }
    origins.set(spec.key, origin);
  };
  if (input.file !== null) {
    const file = input.file;
    for (const [key, value] of Object.entries(file.values)) {
      set(fileSpec(key, value, file.path), { source: 'file', where: `${key} in ${file.path}`, value }, false);
    }
  }
  for (const spec of KEYS) {
    const value = input.env[spec.env];
    // Empty means unset: manifests often template variables that end up "".
    if (value !== undefined && value !== '') set(spec, { source: 'env', where: spec.env, value }, true);
  }
  for (const spec of KEYS.filter((s) => s.commands.includes(input.command))) {
    const raw = input.argv[spec.flag];
    const value = spec.repeatable ? raw : lastOf(raw);
    if (value !== undefined) set(spec, { source: 'flag', where: `--${spec.flag}`, value }, true);
  }
  checkCombinations(settings, origins, input.command);
  return settings;
}

/** lastOf lets a repeated single-valued flag behave as in kubectl: the last one wins. */
function lastOf(raw: unknown): unknown {
  return Array.isArray(raw) ? raw[raw.length - 1] : raw;
}

function fileSpec(key: string, value: unknown, path: string): SettingSpec {
  const spec = KEYS.find((s) => s.key === key);
  if (spec !== undefined) return spec;
  const suggestion = key === 'config' ? null : suggestKey(key, KEYS.map((s) => s.key));
  let hint: string | undefined = suggestion === null ? undefined : `did you mean ${suggestion}?`;
  if (key === 'config') hint = 'a config file cannot name another one';
  if (key === 'owner') hint = 'the owner is set with ownerGroup, ownerVersion, ownerResource and ownerKind';
  throw new ConfigError({
    key, source: 'file', where: `${key} in ${path}`, value,
    problem: 'unknown key',
    allowed: 'the camelCase keys listed in config/finalizer-sweeper.yaml', hint,
  });
}

function invalid(key: string, origin: Origin, problem: string, allowed: string, hint?: string): ConfigError {
  return new ConfigError({ key, source: origin.source, where: origin.where, value: origin.value, problem, allowed, hint });
}

const RANK: Record<Source, number> = { default: 0, file: 1, env: 2, flag: 3 };

/** checkCombinations rejects values that are each valid but wrong together, blaming the one given last. */
function checkCombinations(s: Settings, origins: Map<string, Origin>, command: Command): void {
  const originOf = (key: string): Origin => origins.get(key) ?? { source: 'default', where: key, value: undefined };
  const blame = (a: string, b: string): [string, Origin] => {
    const [oa, ob] = [originOf(a), originOf(b)];
    return RANK[ob.source] > RANK[oa.source] ? [b, ob] : [a, oa];
  };
  const show = (key: string): string => KEYS.find((spec) => spec.key === key)?.show(s) ?? '';
  const pairs: [string, string, boolean, string][] = [
    ['leaderElectionRenewDeadline', 'leaderElectionLeaseDuration', s.renewDeadlineMs < s.leaseDurationMs,
      `renew deadline ${show('leaderElectionRenewDeadline')} is not shorter than the lease duration ${show('leaderElectionLeaseDuration')}`],
    ['leaderElectionRetryPeriod', 'leaderElectionRenewDeadline', s.retryPeriodMs < s.renewDeadlineMs,
      `retry period ${show('leaderElectionRetryPeriod')} is not shorter than the renew deadline ${show('leaderElectionRenewDeadline')}`],
    // A given QPS always applies, so mode apf (never a QPS cap) beside one is a contradiction.
    ['kubeApiBudgetMode', 'kubeApiQps', s.kubeApiBudgetMode !== 'apf' || s.kubeApiQps === null,
      'mode apf sets no QPS cap, yet a QPS is given: drop one of them (mode auto or qps takes the QPS)'],
    ['kubeApiBudgetMode', 'kubeApiBurst', s.kubeApiBudgetMode !== 'apf' || s.kubeApiBurst === null,
      'mode apf sets no QPS cap, yet a burst is given: drop one of them (mode auto or qps takes the burst)'],
  ];
  if (command === 'sweep') {
    pairs.push(['reason', 'forceAfter', !s.reasons.includes('stale') || s.forceAfterMs !== null,
      'reason "stale" needs forceAfter (--force-after) to be set']);
    // --owner-crd-deleted frees exactly the pods its dry run listed: nothing may narrow or widen
    // that set but the selection the digest covers, and a write needs the digest.
    const uninstalled = s.ownerCrdDeleted;
    pairs.push(
      ['confirm', 'ownerCrdDeleted', s.confirm === null || uninstalled, '--confirm confirms a dry run of --owner-crd-deleted, which is not set'],
      ['confirm', 'dryRun', s.confirm === null || !s.dryRun, '--confirm removes finalizers and --dry-run removes none: drop one (--owner-crd-deleted without --confirm is a dry run)'],
      ['ownerCrdDeleted', 'ownerGroup', !uninstalled || s.owner.group !== '', 'the core API group has no CRD'],
      ['ownerCrdDeleted', 'reason', !uninstalled || s.reasons.length === 0, '--owner-crd-deleted frees every pod its dry run listed, for one reason (owner-gone): drop --reason'],
      ['ownerCrdDeleted', 'maxRemovals', !uninstalled || s.maxRemovals === null, '--owner-crd-deleted frees every pod its dry run listed: narrow with --namespace instead of --max-removals'],
    );
  }
  for (const [a, b, ok, problem] of pairs) {
    if (ok) continue;
    const [key, origin] = blame(a, b);
    throw invalid(key, origin, problem, `a value consistent with ${key === a ? b : a}`);
  }
}
