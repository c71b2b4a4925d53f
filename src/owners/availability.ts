// OwnerAvailability tracks whether the API server serves the owner resource. A 404 that names no
// object (a CRD version switched to `served: false`, a CRD not installed, an aggregation layer
// or gateway in a bad state) says nothing about any owner; while it lasts, "owner not found" is
// not evidence of anything (owners.ts holds such conclusions back), the controller is unready,
// and one line says so per outage, not one per retry.
//
// Two paths report here: the owner cache's list/watch, and the live owner reads. Entering an
// outage takes one 404 on either: safety first. Leaving it has hysteresis, per path: a path that
// saw the 404 is cleared when it works again, or once it has been quiet (no further 404) for
// QUIET_MS while the other path is fine. So one odd answer from one API server replica does not
// flip the state back and forth with every request, and an outage that reads saw ends even when
// nothing needs a live read afterwards (orphans whose owners' deletion the watch reported).

import type { OwnerResource } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import { backgroundClock, type Clock } from '../queue/clock.ts';

/** Path is where the outage was seen: the owner cache's list/watch, or a live owner read. */
export type Path = 'list' | 'read';

/**
 * QUIET_MS is how long a path that saw the outage must stay quiet before it is cleared without
 * working again: twice the list/watch's longest retry interval (30 s), so that a failing
 * list/watch is never cleared between two of its own retries.
 */
export const QUIET_MS = 60_000;

export interface OwnerAvailabilityOptions {
  owner: OwnerResource;
  logger: Logger;
  /** consequence ends the outage line with what this command does meanwhile. */
  consequence: string;
  /** onChange is told of every change (the metrics gauge, the controller's resync on recovery). */
  onChange?: (served: boolean) => void;
  clock?: Clock;
  quietMs?: number;
}

export class OwnerAvailability {
  /** The paths that saw the outage, and when each last saw a 404. */
  readonly #missing = new Map<Path, number>();
  readonly #o: OwnerAvailabilityOptions;
  readonly #clock: Clock;
  readonly #quietMs: number;
  #cancelTimer: (() => void) | null = null;

  constructor(o: OwnerAvailabilityOptions) {
    this.#o = o;
    this.#clock = o.clock ?? backgroundClock;
    this.#quietMs = o.quietMs ?? QUIET_MS;
  }

  served(): boolean {
    return this.#missing.size === 0;
  }

  /** notServed records a resource-level 404 seen on `path`; the first one of an outage is logged. */
  notServed(path: Path, err: unknown): void {
    const first = this.#missing.size === 0;
    this.#missing.set(path, this.#clock.now());
    this.#armQuietTimer();
    if (!first) return;
    const { owner, logger, consequence } = this.#o;
    logger.error(
      { resource: owner.resource, err: err instanceof Error ? err.message : String(err) },
      `owner resource ${resourceName(owner)} not found (404): is its CRD installed, and are --owner-group, --owner-version and --owner-resource spelt right? ${consequence}`,
    );
    this.#o.onChange?.(false);
  }

  /** succeeded records that `path` works: it is cleared, and so is any other path gone quiet. */
  succeeded(path: Path): void {
    if (this.#missing.size === 0) return;
    this.#missing.delete(path);
    this.#clearQuiet();
  }

  /** stop cancels the quiet timer (the process is ending). */
  stop(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = null;
  }

  /**
   * #clearQuiet clears the one path left, if it has been quiet for the interval (the other path
   * works), then ends the outage if nothing is left. With both paths failing, only a success
   * starts the way out.
   */
  #clearQuiet(): void {
    const [only] = this.#missing.size === 1 ? this.#missing.values() : [];
    if (only !== undefined && this.#clock.now() - only >= this.#quietMs) this.#missing.clear();
    if (this.#missing.size > 0) return this.#armQuietTimer();
    this.stop();
    this.#o.logger.info({ resource: this.#o.owner.resource }, `recovered: the API server serves ${resourceName(this.#o.owner)} again`);
    this.#o.onChange?.(true);
  }

  /** #armQuietTimer re-checks when the one path left turns quiet. */
  #armQuietTimer(): void {
    this.stop();
    const [only] = this.#missing.size === 1 ? this.#missing.values() : [];
    if (only === undefined) return;
    this.#cancelTimer = this.#clock.schedule(() => {
      this.#cancelTimer = null;
      this.#clearQuiet();
    }, only + this.#quietMs - this.#clock.now());
  }
}

function resourceName(o: OwnerResource): string {
  return o.group === '' ? `${o.resource}/${o.version}` : `${o.resource}.${o.group}/${o.version}`;
}
