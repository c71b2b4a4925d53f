// When one LIST of a namespace's owners is cheaper than one GET per owner awaiting confirmation.
//
// A GET of one owner is one request and one APF seat. A list page is one request, and API Priority
// and Fairness charges a list one seat per 100 objects it estimates to process, at least one
// (k8s.io/apiserver pkg/util/flowcontrol/request/list_work_estimator.go, seatsBasedOnObjectCount;
// ObjectsPerSeat 100 in config.go). So a list of a namespace holding n owners, in pages of p, costs
// max(ceil(n / p), ceil(n / 100)) (at least 1), counted either way, and it pays when that is no
// more than the GETs it replaces. Those are the names waiting now, or, when more is known, the
// owners the caches show will need a read soon: a list answers every pod first observed before it
// started (resolver.ts), not only the pods waiting on it. Below MIN_NAMES a GET each is kept: a
// single owner's read has nothing to share, and two save one request at best.

/** OBJECTS_PER_SEAT is APF's default ObjectsPerSeat for lists. */
const OBJECTS_PER_SEAT = 100;

/** MIN_NAMES is the fewest owners a list must answer to be chosen over GETs. */
export const MIN_NAMES = 3;

/** listCost is what a list of a namespace holding `owners` objects costs, in requests or APF seats, whichever is more. */
export function listCost(owners: number, pageSize: number): number {
  const n = Math.max(owners, 0);
  return Math.max(1, Math.ceil(n / pageSize), Math.ceil(n / OBJECTS_PER_SEAT));
}

/**
 * listPays: a list of a namespace whose owner cache holds `cachedOwners` is no dearer than one GET
 * for each of `names` owners. The cached count may be stale; a list then reads a few pages more or
 * fewer than foreseen, never a wrong answer.
 */
export function listPays(names: number, cachedOwners: number, pageSize: number): boolean {
  return names >= MIN_NAMES && listCost(cachedOwners, pageSize) <= names;
}
