// The human-readable log format (--log-format text), written here rather than adding
// pino-pretty: pino-pretty runs in a worker thread and pulls in a dozen packages to do
// what forty lines do for a format with no colours and no options.
import type { LogDestination } from './destination.ts';

const HIDDEN = new Set(['time', 'level', 'msg', 'err']);

/**
 * textStream turns pino's JSON lines into `TIME LEVEL msg key=value ...`, with an error's
 * stack indented below the line. A line that is not JSON passes through unchanged.
 */
export function textStream(destination: LogDestination): LogDestination {
  return {
    write: (line: string) => destination.write(formatLine(line)),
    flush: (callback) => (destination.flush ? destination.flush(callback) : callback()),
  };
}

/** formatLine formats one JSON log line; exported for tests. */
export function formatLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const level = String(entry.level ?? '').toUpperCase().padEnd(5);
  const parts = [String(entry.time ?? ''), level, String(entry.msg ?? '')];
  for (const [key, value] of Object.entries(entry)) {
    if (!HIDDEN.has(key)) parts.push(`${key}=${formatValue(value)}`);
  }
  const err = entry.err as { message?: unknown; stack?: unknown } | undefined;
  if (err !== undefined) parts.push(`err=${formatValue(err.message ?? err)}`);
  // The stack's first lines repeat the message, already shown as err=...
  const frames = typeof err?.stack === 'string' ? err.stack.split('\n').filter((l) => /^\s+at /.test(l)) : [];
  return `${[parts.join(' '), ...frames.map((f) => `    ${f.trim()}`)].join('\n')}\n`;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}
