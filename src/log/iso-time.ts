// The time of a log line as pino's stdTimeFunctions.isoTime writes it (`,"time":"…Z"`), with the
// text of the current second kept: a busy controller logs a line a removal, and a Date and its
// toISOString a line were a visible share of its logging in issue 46's profiles.

let second = Number.NaN;
let prefix = '';

/** isoTimeAt is `,"time":"<new Date(ms).toISOString()>"`, for whole milliseconds since the epoch. */
export function isoTimeAt(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    // toISOString always ends ".sssZ"; what precedes it (a year may have six digits) is kept.
    prefix = `,"time":"${new Date(s * 1000).toISOString().slice(0, -4)}`;
    second = s;
  }
  const milli = ms - s * 1000;
  return `${prefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z"`;
}

/** isoTime is pino's timestamp option: the time now. */
export function isoTime(): string {
  return isoTimeAt(Date.now());
}
