// finalizer-sweeper's command line: parse flags, build the one Settings, hand it to a command.
// Loaded by src/cli.ts once the Node version is known to be supported.
// Exit codes: 0 done, 1 some removals failed (sweep) or the pod or namespace is stuck (explain), 2 bad flags,
// configuration or input, 3 the API server cannot be reached or refuses us, 130 interrupted.

import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError, defineControllerOptions, defineExplainOptions, defineSweepOptions, loadSettingsAndFile, settingsFromText } from './config/index.ts';
import type { Command } from './config/index.ts';
import type { Settings } from './config/settings.ts';
import { EXIT } from './commands/exit-codes.ts';
import { restartTuned } from './commands/runtime-tuning.ts';
import { CONFIG_KEY, KEYS } from './config/keys.ts';
import { suggestKey } from './config/suggest.ts';
import { dnsLabelProblem } from './config/names.ts';
import { parsePodTarget } from './explain/pod-target.ts';

const COMMANDS: readonly Command[] = ['controller', 'sweep', 'explain'];

async function main(argv: string[]): Promise<number> {
  let chosen: { command: Command; argv: Record<string, unknown> } | null = null;
  let usageError: string | null = null;
  await yargs(argv)
    .scriptName('finalizer-sweeper')
    .usage('$0 [controller|sweep|explain] [flags]\n\nRemoves a workflow engine\'s pod finalizer from pods that no longer need it: orphans first, never from a pod whose status is still needed.')
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
    .strict()
    // Flags stay kebab-case only: loadSettings reads them so, and "Unknown arguments" then names each once.
    .parserConfiguration({ 'camel-case-expansion': false })
    .help()
    .version(false)
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
  const { command, argv: flags } = chosen as { command: Command; argv: Record<string, unknown> };

  let loaded;
  try {
    loaded = await loadSettingsAndFile({ argv: flags, env: process.env, command });
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

/** withSuggestions adds, to yargs' "Unknown argument(s): a, b", the closest flag for each. */
function withSuggestions(message: string, command: Command): string {
  const unknown = /^Unknown arguments?: (.+)$/.exec(message);
  if (unknown === null) return message;
  const known = [CONFIG_KEY.flag, ...KEYS.filter((k) => k.commands.includes(command)).map((k) => k.flag)];
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
