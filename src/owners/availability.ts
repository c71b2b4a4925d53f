// OwnerAvailability tracks whether the API server serves the owner resource. A 404 that names no
// object (a CRD version switched to `served: false`, a CRD not installed, an aggregation layer
// or gateway in a bad state) says nothing about any owner; while it lasts, "owner not found" is
// not evidence of anything, so no pod may be freed on an owner found missing (the reconcile
// step asks `served()`; an owner seen deleted is evidence an outage cannot undo), the controller
// is unready, and one line says so per outage, not one per retry.
// Both the owner list/watch and the live owner reads report here; either can see the outage
// first, and a success on either ends it: a list or a read that works proves the resource is
// served. (Waiting for the path that saw the outage to succeed again would keep the gate shut
// for good when nothing needs a live read afterwards: orphans whose owners' deletion the watch
// reported need none.)

import type { OwnerResource } from '../config/settings.ts';
import type { Logger } from '../log.ts';

/** Path is where the outage was seen: the owner cache's list/watch, or a live owner read. */
export type Path = 'list' | 'read';

export class OwnerAvailability {
  readonly #missing = new Set<Path>();
  readonly #o: { owner: OwnerResource; logger: Logger; consequence: string; onChange?: (served: boolean) => void };

  /**
   * consequence ends the outage line with what this command does meanwhile; onChange is told of
   * every change (the metrics gauge, and the controller's resync on recovery).
   */
  constructor(o: { owner: OwnerResource; logger: Logger; consequence: string; onChange?: (served: boolean) => void }) {
    this.#o = o;
  }

  served(): boolean {
    return this.#missing.size === 0;
  }

  /** notServed records a resource-level 404 seen on `path`; the first one of an outage is logged. */
  notServed(path: Path, err: unknown): void {
    if (this.#missing.has(path)) return;
    const first = this.#missing.size === 0;
    this.#missing.add(path);
    if (!first) return;
    const { owner, logger, consequence } = this.#o;
    logger.error(
      { resource: owner.resource, err: err instanceof Error ? err.message : String(err) },
      `owner resource ${resourceName(owner)} not found (404): is its CRD installed, and are --owner-group, --owner-version and --owner-resource spelt right? ${consequence}`,
    );
    this.#o.onChange?.(false);
  }

  /** succeeded records a success on any path: the outage, if any, is over; logged once. */
  succeeded(): void {
    if (this.#missing.size === 0) return;
    this.#missing.clear();
    this.#o.logger.info({ resource: this.#o.owner.resource }, `recovered: the API server serves ${resourceName(this.#o.owner)} again`);
    this.#o.onChange?.(true);
  }
}

function resourceName(o: OwnerResource): string {
  return o.group === '' ? `${o.resource}/${o.version}` : `${o.resource}.${o.group}/${o.version}`;
}
