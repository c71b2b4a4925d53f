// What a running controller does with a changed config file (see config-watch.ts): it checks the
// new text with the same code that built its settings at start, flags and environment on top,
// and stops for a restart only when that text would start. Otherwise it keeps running on the
// settings it has, says why once per change, and reports it (config_last_reload_successful, for
// the alert FinalizerSweeperConfigReloadFailed): a restart now, or any later one (an OOM kill, a
// node drain), would exit 2 on that text again and again.

import { ConfigError } from '../config/errors.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';

/** WatchedConfig is the config file the settings were built from, and how to build them again from a new text. */
export interface WatchedConfig {
  path: string;
  /** text is the file as it was read at start. */
  text: string;
  /** load builds the settings from `text` as at start (flags and environment on top); throws ConfigError. */
  load(text: string): unknown;
}

export interface ConfigReloadOptions {
  config: WatchedConfig;
  metrics: Pick<Metrics, 'configReload'>;
  logger: Pick<Logger, 'info' | 'error'>;
  /** restart is called once, for the first change that would start: stop, so that the container restarts with it. */
  restart(): void;
}

/** ConfigReload judges each new text of the config file: a restart, or the running settings kept. */
export class ConfigReload {
  readonly #o: ConfigReloadOptions;
  #rejected = false;
  #restarting = false;

  constructor(o: ConfigReloadOptions) {
    this.#o = o;
  }

  /** changed is told of each new text of the file (watchConfigFile calls it once per change). */
  changed(text: string): void {
    if (this.#restarting) return;
    const { config, metrics, logger } = this.#o;
    if (text === config.text) {
      // Back to the text the settings were built from: nothing to restart, nothing wrong any more.
      if (this.#rejected) logger.info({ config: config.path }, 'the config file is back to the text the running settings were built from');
      this.#rejected = false;
      metrics.configReload(true);
      return;
    }
    try {
      config.load(text);
    } catch (err) {
      this.#rejected = true;
      metrics.configReload(false);
      const why = err instanceof ConfigError ? { key: err.key, err: err.message } : { err };
      logger.error({ config: config.path, ...why }, 'the changed config file is invalid: keeping the running settings, not restarting');
      return;
    }
    this.#restarting = true;
    logger.info({ config: config.path }, 'the config file changed: stopping, so that the container restarts with the new settings');
    this.#o.restart();
  }
}
