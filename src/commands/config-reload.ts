// What a running controller does with a changed config file (see config-watch.ts): it checks the
// new text with the same code that built its settings at start, flags and environment on top,
// and stops for a restart only when that text would start. Otherwise it keeps running on the
// settings it has, says why once per change, and reports it (config_last_reload_successful, for
// the alert FinalizerSweeperConfigReloadFailed): a restart now, or any later one (an OOM kill, a
// node drain), would exit 2 on that text again and again. What the start checks against the
// cluster (the owner settings against discovery) is checked too, through `vet`, for the same reason.

import { ConfigError } from '../config/errors.ts';
import type { Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';

/** WatchedConfig is the config file the settings were built from, and how to build them again from a new text. */
export interface WatchedConfig {
  path: string;
  /** text is the file as it was read at start. */
  text: string;
  /** load builds the settings from `text` as at start (flags and environment on top); throws ConfigError. */
  load(text: string): Settings;
}

export interface ConfigReloadOptions {
  config: WatchedConfig;
  metrics: Pick<Metrics, 'configReload'>;
  logger: Pick<Logger, 'info' | 'error'>;
  /** restart is called once, for the first change that would start: stop, so that the container restarts with it. */
  restart(): void;
  /**
   * vet checks settings that load() accepted as the start would check them against the cluster:
   * the refusal a start would exit 2 on, or null (also when the cluster cannot be asked now).
   */
  vet?(settings: Settings): Promise<Error | null>;
}

/** ConfigReload judges each new text of the config file: a restart, or the running settings kept. */
export class ConfigReload {
  readonly #o: ConfigReloadOptions;
  #rejected = false;
  #restarting = false;
  /** #turn numbers the texts: a verdict that arrives after a newer text is dropped. */
  #turn = 0;

  constructor(o: ConfigReloadOptions) {
    this.#o = o;
  }

  /** changed is told of each new text of the file (watchConfigFile calls it once per change); it settles once the text is judged. */
  async changed(text: string): Promise<void> {
    if (this.#restarting) return;
    const turn = ++this.#turn;
    const { config, metrics, logger } = this.#o;
    if (text === config.text) {
      // Back to the text the settings were built from: nothing to restart, nothing wrong any more.
      if (this.#rejected) logger.info({ config: config.path }, 'the config file is back to the text the running settings were built from');
      this.#rejected = false;
      metrics.configReload(true);
      return;
    }
    let refusal: unknown = null;
    try {
      const next = config.load(text);
      refusal = (await this.#o.vet?.(next)) ?? null;
    } catch (err) {
      refusal = err;
    }
    if (turn !== this.#turn || this.#restarting) return;
    if (refusal !== null) {
      this.#rejected = true;
      metrics.configReload(false);
      const why = refusal instanceof ConfigError ? { key: refusal.key, err: refusal.message } : { err: refusal instanceof Error ? refusal.message : String(refusal) };
      logger.error({ config: config.path, ...why }, 'the changed config file is invalid: keeping the running settings, not restarting');
      return;
    }
    this.#restarting = true;
    logger.info({ config: config.path }, 'the config file changed: stopping, so that the container restarts with the new settings');
    this.#o.restart();
  }
}
