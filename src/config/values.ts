// Value parsers shared by the three layers. Flags and environment variables are text, so
// "8" is read as a number there; a YAML file has real types, so `podCleanupWorkers: "8"`
// is a wrong type there rather than something to guess about.
import { parseDuration } from './duration.ts';
import { InvalidValue, showValue } from './errors.ts';

/** Parser turns a raw value into a typed one or throws InvalidValue; textual is true for flags and env. */
export type Parser<T> = (raw: unknown, textual: boolean) => T;

function typeName(raw: unknown): string {
  if (raw === null) return 'null';
  if (Array.isArray(raw)) return 'a list';
  return `a ${typeof raw}`;
}

function wrongType(raw: unknown, allowed: string): InvalidValue {
  return new InvalidValue(`wrong type: ${typeName(raw)}`, allowed);
}

/** integer reads a whole number within [min, max]. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> {
  const allowed = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
  return (raw, textual) => {
    const n = numeric(raw, textual, allowed);
    if (!Number.isInteger(n)) throw new InvalidValue('not an integer', allowed);
    if (n < min || n > max) throw new InvalidValue('out of range', allowed);
    return n;
  };
}

/** positiveNumber reads a finite number > 0 (fractions allowed, as for QPS). */
export const positiveNumber: Parser<number> = (raw, textual) => {
  const allowed = 'a number > 0';
  const n = numeric(raw, textual, allowed);
  if (n <= 0) throw new InvalidValue('out of range', allowed);
  return n;
};

function numeric(raw: unknown, textual: boolean, allowed: string): number {
  if (typeof raw === 'number' && Number.isFinite(raw)) return raw;
  if (typeof raw === 'string' && textual && /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(raw.trim())) {
    return Number(raw);
  }
  if (typeof raw === 'string' && textual) throw new InvalidValue('not a number', allowed);
  throw wrongType(raw, allowed);
}

/** boolean reads true/false; text must spell it out, as "yes" or "1" is ambiguous across tools. */
export const boolean: Parser<boolean> = (raw, textual) => {
  const allowed = 'true or false';
  if (typeof raw === 'boolean') return raw;
  if (typeof raw === 'string' && textual) {
    const lower = raw.trim().toLowerCase();
    if (lower === 'true' || lower === 'false') return lower === 'true';
    throw new InvalidValue('not a boolean', allowed);
  }
  throw wrongType(raw, allowed);
};

/** text reads a string and checks it with problem(), which returns a reason or null. */
export function text(allowed: string, problem: (s: string) => string | null = () => null): Parser<string> {
  return (raw) => {
    if (typeof raw !== 'string') throw wrongType(raw, allowed);
    const why = problem(raw);
    if (why !== null) throw new InvalidValue(why, allowed);
    return raw;
  };
}

/** oneOf reads one of a fixed set of words. */
export function oneOf<T extends string>(choices: readonly T[]): Parser<T> {
  const allowed = `one of ${choices.join(', ')}`;
  return (raw) => {
    if (typeof raw !== 'string') throw wrongType(raw, allowed);
    const found = choices.find((c) => c === raw.trim());
    if (found === undefined) throw new InvalidValue(`unknown value ${showValue(raw)}`, allowed);
    return found;
  };
}

/**
 * list reads repeated flags, comma-separated text or a YAML list (of strings, which may
 * themselves be comma-separated); empty items are dropped and duplicates removed.
 */
export function list<T>(item: Parser<T>, allowed: string): Parser<T[]> {
  return (raw, textual) => {
    const pieces = Array.isArray(raw) ? raw : [raw];
    const words = pieces.flatMap((piece) => {
      if (typeof piece !== 'string') throw wrongType(piece, allowed);
      return piece.split(',').map((w) => w.trim()).filter((w) => w !== '');
    });
    return [...new Set(words.map((w) => item(w, textual)))];
  };
}

/** nullable lets a YAML file write null (or `~`, or nothing) for a setting whose default is null. */
export function nullable<T>(parse: Parser<T>): Parser<T | null> {
  return (raw, textual) => (raw === null ? null : parse(raw, textual));
}

/** requiredDuration reads a Go-style duration > 0 into milliseconds. */
export const requiredDuration: Parser<number> = (raw) => {
  const allowed = 'a duration > 0 such as 90s, 5m, 1h30m or 250ms';
  const ms = durationMs(raw, allowed);
  if (ms === 0) throw new InvalidValue('out of range', allowed);
  return ms;
};

/** optionalDuration reads a Go-style duration into milliseconds; 0 (or YAML null) means off. */
export const optionalDuration: Parser<number | null> = (raw) => {
  if (raw === null) return null;
  const ms = durationMs(raw, 'a duration such as 90s, 5m or 1h30m, or 0 for off');
  return ms === 0 ? null : ms;
};

function durationMs(raw: unknown, allowed: string): number {
  if (raw === 0) return 0;
  if (typeof raw === 'number') {
    throw new InvalidValue('a bare number has no unit', allowed, `did you mean "${raw}s"?`);
  }
  if (typeof raw !== 'string') throw wrongType(raw, allowed);
  try {
    return parseDuration(raw);
  } catch (err) {
    if (err instanceof InvalidValue) throw new InvalidValue(err.problem, allowed, err.hint);
    throw err;
  }
}
