// How each command acts on the owner settings' proof (owner-settings.ts). At start, a mismatch
// or a group/version that lists neither the resource nor the kind is refused (exit 2): no owner
// read may count while the settings may name something else. A group/version not served at all
// is the owner outage, waited out as before; the controller then keeps checking (proveLater)
// until discovery proves the settings, and stops with exit 2 if it shows a mismatch instead.

import type { OwnerResource } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import type { Logger } from '../log.ts';
import { isAbort } from '../kube/errors.ts';
import { checkOwnerSettings, settingsFlags, type OwnerSettingsVerdict } from './owner-settings.ts';
import { pause } from '../abort.ts';

/** OwnerSettingsRefused: discovery shows that the owner settings do not name the owner. */
export class OwnerSettingsRefused extends Error {
  override readonly name = 'OwnerSettingsRefused';
}

/** refusalOf words a verdict that refuses the settings; null for one that does not. */
export function refusalOf(owner: OwnerResource, v: OwnerSettingsVerdict, atStart: boolean): OwnerSettingsRefused | null {
  if (v.kind === 'mismatch' || (atStart && v.kind === 'absent')) {
    const hint = v.kind === 'absent' ? '; if the CRD was deleted (Argo uninstalled), see `sweep --owner-crd-deleted`' : '';
    return new OwnerSettingsRefused(`the owner settings do not name a namespaced resource of kind ${owner.kind} (${settingsFlags(owner)}): ${v.detail}${hint}`);
  }
  return null;
}

/**
 * proveAtStart checks the settings once. It throws OwnerSettingsRefused when they are refused,
 * and the API error when discovery cannot be read; otherwise it says whether they are proven.
 */
export async function proveAtStart(client: Pick<ApiClient, 'request'>, owner: OwnerResource, signal?: AbortSignal): Promise<boolean> {
  const v = await checkOwnerSettings(client, owner, signal);
  const refused = refusalOf(owner, v, true);
  if (refused !== null) throw refused;
  return v.kind === 'proven';
}

/** RECHECK_MS is how often unproven settings are checked again: one discovery GET each time. */
export const RECHECK_MS = 10_000;

/**
 * proveLater checks the settings every RECHECK_MS until discovery proves them (then onProven),
 * the signal aborts, or discovery shows a mismatch (then it throws OwnerSettingsRefused). A
 * group/version still not served, or one that lists neither name yet (Argo's CRDs being
 * installed one by one), is waited for; a failed read is logged once and tried again.
 */
export async function proveLater(o: { client: Pick<ApiClient, 'request'>; owner: OwnerResource; logger: Logger; signal: AbortSignal; onProven(): void; recheckMs?: number }): Promise<void> {
  let failing = false;
  while (!o.signal.aborted) {
    try {
      const v = await checkOwnerSettings(o.client, o.owner, o.signal);
      const refused = refusalOf(o.owner, v, false);
      if (refused !== null) throw refused;
      if (v.kind === 'proven') {
        o.logger.info({ resource: o.owner.resource }, 'the owner settings are proven against discovery: owners found gone now free their pods');
        return o.onProven();
      }
      failing = false;
    } catch (err) {
      if (err instanceof OwnerSettingsRefused || isAbort(err) || o.signal.aborted) throw err;
      if (!failing) o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'cannot read discovery to check the owner settings; trying again');
      failing = true;
    }
    await pause(o.recheckMs ?? RECHECK_MS, o.signal);
  }
}
