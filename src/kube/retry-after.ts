// How long a 429 makes us wait. The server (or a gateway in front of it) says how long in
// Retry-After, but may say 0, which taken literally re-sends at once into the same throttling: a
// hot loop; or something absurd (a day), which would park work for good on one bad answer. So
// every wait a 429 asks for is clamped, in one place, wherever it is honoured: the budget's pause,
// a key's requeue, a read inside a removal, the sweep's list.

/** RETRY_AFTER: used when the answer names no wait (or an unreadable one), and the clamp. */
export const RETRY_AFTER = {
  defaultMs: 1_000,
  /** Retry-After counts whole seconds: 0 means "soon", and one second is soon enough. */
  floorMs: 1_000,
  ceilingMs: 60_000,
} as const;

/** retryAfterMs is the wait for a 429 that asked for `seconds` (null: asked for nothing readable). */
export function retryAfterMs(seconds: number | null): number {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return RETRY_AFTER.defaultMs;
  return Math.min(RETRY_AFTER.ceilingMs, Math.max(RETRY_AFTER.floorMs, seconds * 1000));
}
