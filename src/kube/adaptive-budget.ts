// AdaptiveBudget is the budget the commands use: the policy's decisions (budget-policy.ts) applied
// to the limiter (budget.ts) as answers come in, each change reported to `onChange` (logs, metrics).

import { Limiter, type Answer, type Budget } from './budget.ts';
import { BudgetPolicy, type BudgetEvent, type BudgetPolicyOptions, type BudgetState } from './budget-policy.ts';

export class AdaptiveBudget implements Budget {
  readonly #policy: BudgetPolicy;
  readonly #limiter: Limiter;
  readonly #onChange: (event: BudgetEvent, state: BudgetState) => void;

  constructor(o: BudgetPolicyOptions & { onChange?: (event: BudgetEvent, state: BudgetState) => void }) {
    this.#policy = new BudgetPolicy(o);
    const s = this.#policy.state;
    this.#limiter = new Limiter({ rate: s.rate, maxConcurrent: s.concurrency });
    this.#onChange = o.onChange ?? (() => {});
  }

  /** state is what the budget enforces now, and why. */
  get state(): BudgetState {
    return this.#policy.state;
  }

  get queued(): number {
    return this.#limiter.queued;
  }

  schedule<T>(priority: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.#limiter.schedule(priority, fn, signal);
  }

  answered(answer: Answer): void {
    const before = this.#policy.state;
    const events = this.#policy.answered(answer);
    if (events.length === 0) return;
    const after = this.#policy.state;
    if (before.rate !== null && after.rate === null) this.#limiter.removeRate();
    if (after.concurrency !== before.concurrency) this.#limiter.setMaxConcurrent(after.concurrency);
    for (const event of events) {
      if (event.kind === 'throttled' && event.pauseMs > 0) this.#limiter.pause(event.pauseMs);
      this.#onChange(event, after);
    }
  }

  close(): void {
    this.#limiter.close();
  }
}
