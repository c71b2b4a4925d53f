// Logging behind an interface of our own, so that nothing else depends on pino. Logs go to
// stderr: stdout is reserved for `sweep --output json`.
import { pino } from 'pino';
import type { Settings } from './config/settings.ts';
import type { LogDestination } from './log/destination.ts';
import { batched, type BatchedDestination } from './log/batched.ts';
import { textStream } from './log/text.ts';
import { isoTime } from './log/iso-time.ts';

export type { LogDestination };

/** LogFields are the structured fields of a log line, and the bindings of a child logger. */
export type LogFields = Record<string, unknown>;

/** Logger is what the rest of the code logs through. Errors go in the `err` field. */
export interface Logger {
  debug(fields: LogFields, msg: string): void;
  info(fields: LogFields, msg: string): void;
  warn(fields: LogFields, msg: string): void;
  error(fields: LogFields, msg: string): void;
  /** child returns a logger that adds bindings to every line. */
  child(bindings: LogFields): Logger;
  /** flush resolves once every line logged so far has been handed to the operating system. */
  flush(): Promise<void>;
}

/** createLogger builds the process logger from --log-level and --log-format, writing to stderr by default. */
export function createLogger(
  settings: Pick<Settings, 'logLevel' | 'logFormat'>,
  destination: LogDestination = stderr(),
): Logger {
  const text = settings.logFormat === 'text';
  const logger = pino(
    {
      level: settings.logLevel,
      timestamp: isoTime,
      // Level names rather than numbers: readable by people and by log pipelines alike.
      formatters: { level: (label) => ({ level: label }) },
      ...(text ? { base: null } : {}),
    },
    text ? textStream(destination) : destination,
  );
  return wrap(logger);
}

/**
 * Lines wait at most this long to be written together (src/log/batched.ts): the per-removal
 * info lines of a busy controller go out a few dozen to a write instead of one each.
 */
const STDERR_BATCH = { maxChars: 16_384, maxDelayMs: 100 };

let stderrDestination: BatchedDestination | null = null;

/**
 * stderr writes synchronously, as Node does for process.stderr on pipes and files, in batches.
 * Lines still waiting when the process exits (a return from main, process.exit, an uncaught
 * exception) are written by the 'exit' listener, which runs synchronously before the process
 * ends; only a process killed outright (SIGKILL, the OOM killer) loses them, at most maxDelayMs
 * of lines. One destination per process, so that one listener serves every logger.
 */
function stderr(): LogDestination {
  if (stderrDestination === null) {
    const destination = batched(pino.destination({ fd: 2, sync: true }), STDERR_BATCH);
    process.once('exit', () => destination.writeNow());
    stderrDestination = destination;
  }
  return stderrDestination;
}

/**
 * wrap adapts pino. A child's bindings are merged into each line's fields here rather than handed
 * to pino's child(), which writes a binding and a field of the same name both: a line with the
 * same key twice, which log pipelines that parse JSON strictly reject. The line's own field wins.
 */
function wrap(logger: pino.Logger, bindings: LogFields = {}): Logger {
  const fieldsOf = Object.keys(bindings).length === 0 ? (fields: LogFields) => fields : (fields: LogFields) => ({ ...bindings, ...fields });
  return {
    debug: (fields, msg) => logger.debug(fieldsOf(fields), msg),
    info: (fields, msg) => logger.info(fieldsOf(fields), msg),
    warn: (fields, msg) => logger.warn(fieldsOf(fields), msg),
    error: (fields, msg) => logger.error(fieldsOf(fields), msg),
    child: (more) => wrap(logger, { ...bindings, ...more }),
    flush: () =>
      new Promise((resolve, reject) => {
        logger.flush((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** LogRecord is one parsed line captured by recordingLogger. */
export interface LogRecord extends LogFields {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
}

/** recordingLogger captures lines as objects, for tests that assert what was logged. */
export function recordingLogger(): { logger: Logger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const logger = createLogger(
    { logLevel: 'debug', logFormat: 'json' },
    { write: (line) => records.push(JSON.parse(line) as LogRecord) },
  );
  return { logger, records };
}

/** silentLogger discards everything, for tests that do not care about logs. */
export function silentLogger(): Logger {
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: () => {},
    child: () => logger,
    flush: () => Promise.resolve(),
  };
  return logger;
}
