// LogDestination lives in a module of its own so that the logger (src/log.ts) and the text
// format (src/log/text.ts) can both name it without importing each other.

/** LogDestination receives finished lines (each ending in "\n"); tests pass their own. */
export interface LogDestination {
  write(line: string): unknown;
  flush?(callback: (err?: Error) => void): void;
}
