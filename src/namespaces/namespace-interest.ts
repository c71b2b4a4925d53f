// Which namespaces a controller limited to --namespace needs to read for the rule "a doomed
// namespace dooms its owners": those where a pod kept our finalizer lately. The rule changes the
// decision only for a pod that would otherwise keep it (its owner alive and the pod unrecorded, no
// owner attributed, or its owner not readable for now); a pod due to go anyway (an orphan) goes
// whatever its namespace does, and a namespace that holds no pod of ours needs no answer at all.
// So a backlog of orphans, or a quiet namespace, costs no read a second, while a namespace whose
// pods wait is read as before.
//
// A waiting pod is decided again at least once every resync period (and on every change of it or
// its owner), each time noted here: a namespace stays due for a resync period, and a margin, after
// its last note, so that it is read for as long as any of its pods waits.

/** NamespaceInterest remembers, per namespace, when one of its pods last kept our finalizer. */
export class NamespaceInterest {
  readonly #lastAt = new Map<string, number>();
  readonly #windowMs: number;

  /** windowMs: how long a namespace stays due after its last note. */
  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /**
   * note: a pod of the namespace keeps our finalizer for now, at `now` (ms, any monotonic clock).
   * It says whether the namespace was not due until now, so that it can be read at once.
   */
  note(namespace: string, now: number): boolean {
    const wasDue = this.#isDue(namespace, now);
    this.#lastAt.set(namespace, now);
    return !wasDue;
  }

  /** due returns those of `names` noted within the window before `now`, in the order given. */
  due(names: readonly string[], now: number): string[] {
    return names.filter((name) => this.#isDue(name, now));
  }

  #isDue(namespace: string, now: number): boolean {
    const at = this.#lastAt.get(namespace);
    return at !== undefined && now - at <= this.#windowMs;
  }
}
