// The public face of src/config: what src/cli.ts and the commands import.
export { ConfigError } from './errors.ts';
export type { Source } from './errors.ts';
export { formatDuration, parseDuration } from './duration.ts';
export { describeSettings } from './describe.ts';
export { defineControllerOptions, defineExplainOptions, defineOptions, defineStatusOptions, defineSweepOptions } from './flags.ts';
export type { Command } from './keys.ts';
export { loadSettings, loadSettingsAndFile, resolveSettings, settingsFromText } from './load.ts';
export type { LoadInput } from './load.ts';
