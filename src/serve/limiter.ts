/**
 * A counting semaphore with a bounded wait queue: at most `maxActive` holders at once, at most
 * `maxQueued` waiting; beyond that `tryAcquire` refuses at once (the server answers 429) rather
 * than letting requests pile up without bound.
 */
export class ConcurrencyLimiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly maxActive: number,
    readonly maxQueued: number,
  ) {
    if (!Number.isInteger(maxActive) || maxActive < 1)
      throw new RangeError(`maxActive must be a positive integer, got ${maxActive}`);
    if (!Number.isInteger(maxQueued) || maxQueued < 0)
      throw new RangeError(`maxQueued must be a non-negative integer, got ${maxQueued}`);
  }

  get activeCount(): number {
    return this.active;
  }

  get queuedCount(): number {
    return this.waiting.length;
  }

  /** Resolves with a release function once a slot is free, or null when the queue is full. */
  tryAcquire(): Promise<(() => void) | null> {
    if (this.active < this.maxActive) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.maxQueued) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.waiting.push(() => resolve(this.releaser()));
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next)
        next(); // the slot passes straight to the next waiter
      else this.active--;
    };
  }
}
