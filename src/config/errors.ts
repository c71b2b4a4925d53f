// Configuration mistakes are reported as one error type so that src/cli.ts can turn
// every one of them into exit code 2 and a single readable line.

/** Source is the layer a value came from, in increasing order of precedence after 'default'. */
export type Source = 'default' | 'file' | 'env' | 'flag';

/** ConfigErrorDetails names the key, where its value came from, the value and what is allowed. */
export interface ConfigErrorDetails {
  /** The setting's config-file key (camelCase), or the unknown key as written. */
  key: string;
  source: Source;
  /** How the user wrote the key: `--pod-cleanup-workers`, `FINALIZER_SWEEPER_…`, or `podCleanupWorkers in /path`. */
  where: string;
  /** The bad value; undefined when there is none to show (a file with two documents). */
  value: unknown;
  problem: string;
  allowed: string;
  hint?: string;
}

/** ConfigError is a mistake in flags, environment or config file; the CLI exits with code 2 on it. */
export class ConfigError extends Error {
  readonly key: string;
  readonly source: Source;
  readonly value: unknown;
  readonly allowed: string;

  constructor(details: ConfigErrorDetails) {
    super(formatMessage(details));
    this.name = 'ConfigError';
    this.key = details.key;
    this.source = details.source;
    this.value = details.value;
    this.allowed = details.allowed;
  }
}

function formatMessage(d: ConfigErrorDetails): string {
  const hint = d.hint === undefined ? '' : ` (${d.hint})`;
  const value = d.value === undefined ? '' : ` ${showValue(d.value)}:`;
  return `${d.where} (${d.source}):${value} ${d.problem}; allowed: ${d.allowed}${hint}`;
}

/** showValue quotes strings so that empty and padded values are visible in messages. */
export function showValue(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * InvalidValue is thrown by the value parsers, which do not know the key or its source;
 * the loader wraps it into a ConfigError.
 */
export class InvalidValue extends Error {
  readonly problem: string;
  readonly allowed: string;
  readonly hint: string | undefined;

  constructor(problem: string, allowed: string, hint?: string) {
    super(`${problem}; allowed: ${allowed}`);
    this.name = 'InvalidValue';
    this.problem = problem;
    this.allowed = allowed;
    this.hint = hint;
  }
}
