// The FINALIZER_SWEEPER_* variables a command starts with: every one is a setting, a variable this
// project's own tools read, or one Kubernetes injects for a Service; any other is refused at start
// as an unknown flag is, with the closest variable suggested. A misspelt FINALIZER_SWEEPER_DRYRUN
// left unread once let a sweeper that was meant to be in dry run remove finalizers.
import { CONFIG_KEY, ENV_PREFIX, KEYS } from './keys.ts';
import { suggestKey } from './suggest.ts';

/**
 * TOOL_VARIABLES are read by this project's test and build tools, not by the CLI, and are set in
 * the shells that run them (CI, developers' machines): the CLI started there must not refuse them.
 * src/config/environment.test.ts fails when the repository names a variable that is neither this
 * nor a setting.
 */
export const TOOL_VARIABLES: readonly string[] = [
  'FINALIZER_SWEEPER_KUBE_VERSION',
  'FINALIZER_SWEEPER_CACHE_DIR',
  'FINALIZER_SWEEPER_SKIP_IMAGE_TESTS',
];

/** TEST_PREFIX starts the variables the test harness passes to its own processes (FINALIZER_SWEEPER_TEST_KUBECONFIG). */
export const TEST_PREFIX = `${ENV_PREFIX}TEST_`;

/**
 * SERVICE_LINK matches what the kubelet injects for a Service whose name starts with
 * finalizer-sweeper, in a pod without `enableServiceLinks: false` (Argo's, in the sidecar routes:
 * FINALIZER_SWEEPER_METRICS_SERVICE_HOST for our metrics Service). No setting ends so.
 */
const SERVICE_LINK = /_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT|PORT_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)$/;

/** settingVariables are the variables of the settings, every command's, FINALIZER_SWEEPER_CONFIG included. */
export function settingVariables(): string[] {
  return [CONFIG_KEY.env, ...KEYS.map((k) => k.env)];
}

/** isKnownVariable says whether a FINALIZER_SWEEPER_* name is one the CLI may meet without a word. */
export function isKnownVariable(name: string): boolean {
  return settingVariables().includes(name) || TOOL_VARIABLES.includes(name) || name.startsWith(TEST_PREFIX) || SERVICE_LINK.test(name);
}

/**
 * unknownVariables lists, as the CLI reports an unknown flag, the FINALIZER_SWEEPER_* variables
 * that are none of the known ones, each with the closest setting's variable when one is close:
 * null when there are none. Empty variables count too: a misspelt one is a mistake whatever its value.
 */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>): string | null {
  const unknown = Object.keys(env).filter((name) => name.startsWith(ENV_PREFIX) && !isKnownVariable(name)).sort();
  if (unknown.length === 0) return null;
  const hints = unknown.flatMap((name) => {
    const close = suggestVariable(name);
    return close === null ? [] : [`${name}: did you mean ${close}?`];
  });
  return [`Unknown environment variable${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, ...hints].join('\n');
}

/** suggestVariable is the setting variable closest to an unknown one, the prefix doubled included. */
function suggestVariable(name: string): string | null {
  // A key of the settings ConfigMap written with the prefix, which envFrom's prefix then doubles.
  const single = name.startsWith(ENV_PREFIX + ENV_PREFIX) ? name.slice(ENV_PREFIX.length) : name;
  if (settingVariables().includes(single)) return single;
  const key = suggestKey(single.slice(ENV_PREFIX.length), settingVariables().map((v) => v.slice(ENV_PREFIX.length)));
  return key === null ? null : ENV_PREFIX + key;
}
