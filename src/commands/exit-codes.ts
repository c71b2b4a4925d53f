// EXIT names the process exit codes; docs/operations.md's "Exit codes" table documents them, and
// docs/explain.md what they mean for `explain`.
export const EXIT = {
  ok: 0,
  /** Some removals failed (sweep), the pod is stuck (explain), an install does not work (status), or the controller stopped on an unexpected error. */
  failed: 1,
  /** Bad flags, environment or configuration file (or explain's NAMESPACE/NAME). */
  badConfig: 2,
  /** The API server cannot be reached, or refuses our credentials or permissions. */
  unreachable: 3,
  /** No install found (status): no Deployment runs the controller container where it looked. */
  notFound: 4,
  /** Interrupted (SIGINT) before the work was done: 128 + SIGINT, as shells report it. */
  interrupted: 130,
} as const;
