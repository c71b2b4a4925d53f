// The `finalizer-sweeper sweep` command line that `explain namespace` hands the operator: the
// sweep decides each pod as explain did only if it is given the same settings, so every setting
// the decision or the connection depends on is carried over when it is not the default, rendered
// by KEYS' own show() so that the sweep reads it back as given.

import { KEYS } from '../config/keys.ts';
import { DEFAULTS, type Settings } from '../config/settings.ts';

/**
 * CARRIED are the keys that decide which cluster is swept, which pods are ours and what the
 * decision is. Settings the sweep alone takes (--max-removals, --reason) are the operator's
 * choice, and the API budget is explain's own (it takes none).
 */
const CARRIED = ['kubeconfig', 'context', 'podSelector', 'instanceId', 'finalizer', 'ownerGroup', 'ownerVersion', 'ownerResource', 'ownerKind', 'forceAfter', 'nodeStatus', 'namespaceDeleting'];

/** SweepCommand is the sweep to run, as arguments and as a line to paste into a shell. */
export interface SweepCommand {
  /** The arguments after the program name, for tools. */
  argv: string[];
  /** The same with --dry-run, to run first. */
  dryRun: string;
  command: string;
}

/**
 * sweepCommand is the sweep of one namespace with the settings explain used. In a Terminating
 * namespace the API server refuses to create anything, Events included, so the sweep is told to
 * write none rather than warn that they were dropped.
 */
export function sweepCommand(settings: Settings, namespace: string, namespaceTerminating: boolean): SweepCommand {
  const argv = ['sweep', '--namespace', namespace];
  for (const spec of KEYS.filter((k) => CARRIED.includes(k.key))) {
    const value = spec.show(settings);
    if (value === spec.show(DEFAULTS)) continue;
    // A boolean flag takes its value after =: a separate word would be read as an argument.
    if (spec.boolean) argv.push(`--${spec.flag}=${value}`);
    else argv.push(`--${spec.flag}`, value);
  }
  if (namespaceTerminating) argv.push('--events', 'none');
  const line = (args: string[]) => ['finalizer-sweeper', ...args].map(shellQuoted).join(' ');
  return { argv, dryRun: line([...argv, '--dry-run']), command: line(argv) };
}

/** shellQuoted leaves plain words alone and single-quotes the rest (a selector's "!", spaces). */
export function shellQuoted(word: string): string {
  if (/^[A-Za-z0-9_./:=,@%+-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
