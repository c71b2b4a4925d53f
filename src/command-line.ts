// finalizer-sweeper's command line: parse flags, build the one Settings, hand it to a command.
// Loaded by src/cli.ts once the Node version is known to be supported.
// Exit codes: 0 done, 1 some removals failed (sweep), the pod or namespace is stuck (explain) or an
// install does not work (status), 2 bad flags, configuration or input, 3 the API server cannot be
// reached or refuses us, 4 no install found (status), 130 interrupted.

import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError, defineControllerOptions, defineExplainOptions, defineStatusOptions, defineSweepOptions, loadSettingsAndFile, settingsFromText } from './config/index.ts';
import type { Command } from './config/index.ts';
import type { Settings } from './config/settings.ts';
import { EXIT } from './commands/exit-codes.ts';
import { restartTuned } from './commands/runtime-tuning.ts';
import { CONFIG_KEY, KEYS } from './config/keys.ts';
import { unknownVariables } from './config/environment.ts';
import { suggestKey } from './config/suggest.ts';
import { dnsLabelProblem, dnsSubdomainProblem } from './config/names.ts';
import { parsePodTarget } from './explain/pod-target.ts';
import { VERSION } from './version.ts';

const COMMANDS: readonly Command[] = ['controller', 'sweep', 'explain', 'status'];

async function main(argv: string[]): Promise<number> {
  let chosen: { command: Command; argv: Record<string, unknown> } | null = null;
  let usageError: string | null = null;
  await yargs(argv)
    .scriptName('finalizer-sweeper')
    .usage('$0 [controller|sweep|explain|status] [flags]\n\nRemoves a workflow engine\'s pod finalizer from pods that no longer need it: orphans first, never from a pod whose status is still needed.')
    .command(['controller', '$0'], 'watch pods and owners and remove the finalizer continuously (default)', (y) => defineControllerOptions(y), (a) => {
      chosen = { command: 'controller', argv: a };
    })
    .command('sweep', 'one-shot cleanup: list, decide, remove, report, exit', (y) => defineSweepOptions(y), (a) => {
      chosen = { command: 'sweep', argv: a };
    })
    .command('explain <kind> <target>', 'read-only: why a pod or a namespace is stuck, with evidence (explain pod NAMESPACE/NAME, explain namespace NAME)', (y) =>
      defineExplainOptions(y)
        .positional('kind', { choices: ['pod', 'namespace'] as const, describe: 'what to explain' })
        .positional('target', { type: 'string', describe: 'NAMESPACE/NAME of the pod, or NAME of the namespace' }), (a) => {
      chosen = { command: 'explain', argv: a };
    })
    .command('status [install]', 'read-only: whether an install works: which one, who leads, ready, its selector against the pods, the latest removals and errors (status [NAMESPACE[/DEPLOYMENT]])', (y) =>
      defineStatusOptions(y)
        .positional('install', { type: 'string', describe: 'NAMESPACE, or NAMESPACE/DEPLOYMENT, to look in; every namespace when absent' })
        .option('metrics-url', { type: 'string', requiresArg: true, group: 'Output:', describe: 'read the install\'s metrics here (e.g. http://127.0.0.1:8080/metrics through kubectl port-forward) instead of through the API server\'s proxy' }), (a) => {
      chosen = { command: 'status', argv: a };
    })
    .strict()
    // Flags stay kebab-case only: loadSettings reads them so, and "Unknown arguments" then names each once.
    .parserConfiguration({ 'camel-case-expansion': false })
    .help()
    .version(VERSION)
    .wrap(Math.min(110, process.stdout.columns ?? 110))
    .fail((msg, err) => {
      usageError = withSuggestions(msg ?? err?.message ?? 'invalid arguments', COMMANDS.find((c) => c === argv[0]) ?? 'controller');
    })
    .parseAsync();

  if (usageError !== null) {
    process.stderr.write(`finalizer-sweeper: ${usageError}\nRun 'finalizer-sweeper --help' for the flags.\n`);
    return EXIT.badConfig;
  }
  if (chosen === null) return EXIT.ok; // --help
  // A misspelt variable is refused as a misspelt flag is: left unread, it would change nothing without a word.
  const unknownEnv = unknownVariables(process.env);
  if (unknownEnv !== null) {
    process.stderr.write(`finalizer-sweeper: ${unknownEnv}\nRun 'finalizer-sweeper --help' for the flags; each has its variable (docs/configuration.md).\n`);
    return EXIT.badConfig;
  }
  const { command, argv: flags } = chosen as { command: Command; argv: Record<string, unknown> };

  let loaded;
  try {
    // status reports the install's settings, read from the cluster: a config file of the operator's shell is not its.
    const env = command === 'status' ? { ...process.env, [CONFIG_KEY.env]: undefined } : process.env;
    loaded = await loadSettingsAndFile({ argv: flags, env, command });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`finalizer-sweeper: ${err.message}\n`);
      return EXIT.badConfig;
    }
    throw err;
  }
  const { settings, file } = loaded;
  if (command === 'sweep') return (await import('./commands/sweep.ts')).runSweep(settings);
  if (command === 'explain') return explain(String(flags['kind']), String(flags['target']), settings);
  if (command === 'status') return status(flags['install'], flags['metrics-url'], settings);
  // A long-running process: restart once with glibc and V8 tuned for memory as the image runs them
  // (runtime-tuning.ts). Only once the flags are known good, so a mistake exits at once.
  restartTuned();
  // A changed config file is checked as this start checked it: the same flags and environment on top.
  const watched = file === null ? null : { path: file.path, text: file.text, load: (text: string) => settingsFromText({ argv: flags, env: process.env, command }, file.path, text) };
  return (await import('./commands/controller.ts')).runController(settings, watched);
}

/** explain runs `explain pod NAMESPACE/NAME` or `explain namespace NAME`; a bad target exits 2. */
async function explain(kind: string, target: string, settings: Settings): Promise<number> {
  if (kind === 'namespace') {
    const problem = dnsLabelProblem(target);
    if (problem !== null) {
      process.stderr.write(`finalizer-sweeper: explain namespace "${target}": ${problem}\n`);
      return EXIT.badConfig;
    }
    return (await import('./commands/explain.ts')).runExplainNamespace(settings, target);
  }
  const pod = parsePodTarget(target);
  if ('problem' in pod) {
    process.stderr.write(`finalizer-sweeper: explain pod ${pod.problem}\n`);
    return EXIT.badConfig;
  }
  return (await import('./commands/explain.ts')).runExplainPod(settings, pod);
}

/** status runs `status [NAMESPACE[/DEPLOYMENT]]`; a bad target or URL exits 2. */
async function status(install: unknown, metricsUrl: unknown, settings: Settings): Promise<number> {
  const [namespace, deployment, ...rest] = typeof install === 'string' ? install.split('/') : [];
  const problem = namespace === undefined ? null
    : rest.length > 0 ? 'not NAMESPACE or NAMESPACE/DEPLOYMENT'
    : dnsLabelProblem(namespace) ?? (deployment === undefined ? null : dnsSubdomainProblem(deployment));
  const url = typeof metricsUrl === 'string' ? metricsUrl : null;
  const badUrl = url !== null && !/^https?:\/\/./.test(url);
  if (problem !== null || badUrl) {
    process.stderr.write(`finalizer-sweeper: status ${badUrl ? `--metrics-url "${url}": not an http(s) URL` : `"${String(install)}": ${problem}`}\n`);
    return EXIT.badConfig;
  }
  return (await import('./commands/status.ts')).runStatus(settings, { namespace: namespace ?? null, deployment: deployment ?? null, metricsUrl: url });
}

/** withSuggestions adds, to yargs' "Unknown argument(s): a, b", the closest flag for each. */
function withSuggestions(message: string, command: Command): string {
  const unknown = /^Unknown arguments?: (.+)$/.exec(message);
  if (unknown === null) return message;
  const own = command === 'status' ? ['metrics-url'] : [CONFIG_KEY.flag];
  const known = [...own, ...KEYS.filter((k) => k.commands.includes(command)).map((k) => k.flag)];
  const hints = (unknown[1] as string).split(', ').flatMap((name) => {
    const close = suggestKey(name, known);
    return close === null ? [] : [`--${name}: did you mean --${close}?`];
  });
  return [message, ...hints].join('\n');
}

main(hideBin(process.argv)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`finalizer-sweeper: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = EXIT.failed;
  },
);
