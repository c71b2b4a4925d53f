// Durations are written the way Go's time.ParseDuration reads them (90s, 5m, 1h30m, 250ms),
// because operators of Kubernetes controllers already write them that way.
import { InvalidValue } from './errors.ts';

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
// 'ms' precedes 'm' so that "250ms" is not read as 250 minutes followed by junk.
const TERM = /(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)/y;
const ALLOWED = 'a duration such as 90s, 5m, 1h30m or 250ms (units h, m, s, ms)';

/** parseDuration reads a Go-style duration into milliseconds; a bare "0" is zero. Throws InvalidValue. */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (trimmed === '') throw new InvalidValue('empty duration', ALLOWED);
  if (trimmed === '0') return 0;
  if (/^\d+(\.\d*)?$/.test(trimmed)) {
    throw new InvalidValue('a bare number has no unit', ALLOWED, `did you mean "${trimmed}s"?`);
  }
  if (trimmed.startsWith('-')) throw new InvalidValue('negative duration', ALLOWED);
  let ms = 0;
  TERM.lastIndex = 0;
  while (TERM.lastIndex < trimmed.length) {
    const at = TERM.lastIndex;
    const match = TERM.exec(trimmed);
    if (match === null) throw new InvalidValue(unreadable(trimmed, at), ALLOWED);
    ms += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? NaN);
  }
  const whole = Math.round(ms);
  // Tolerate binary rounding ("1.1s"), not real sub-millisecond precision.
  if (!Number.isFinite(ms) || Math.abs(ms - whole) > 1e-6) {
    throw new InvalidValue('finer than a millisecond', ALLOWED);
  }
  return whole;
}

function unreadable(text: string, at: number): string {
  const rest = text.slice(at);
  return /^(\d+(\.\d*)?|\.\d+)(ns|us|µs)/.test(rest)
    ? 'units finer than ms are not supported'
    : `cannot read "${rest}"`;
}

/** formatDuration renders milliseconds the way Go prints a time.Duration (5m0s, 1h30m0s, 250ms). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1_000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = (ms % 60_000) / 1_000;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
