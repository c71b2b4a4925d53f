// describeSettings backs --print-config and the build/config info metric: one flat record
// whose keys are the config-file keys and whose values read back through the same parsers.
import { KEYS } from './keys.ts';
import type { Settings } from './settings.ts';

/**
 * describeSettings renders every setting as text, keyed by config-file key, in KEYS order.
 * Durations are Go-style ("5m0s"), lists comma-separated, unset values "" (forceAfter off too).
 */
export function describeSettings(settings: Settings): Record<string, string> {
  return Object.fromEntries(KEYS.map((spec) => [spec.key, spec.show(settings)]));
}
