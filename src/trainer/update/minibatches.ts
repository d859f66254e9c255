import type { RandomGenerator, RandomState } from '../../util/random.js';
import type { TeamBatch } from '../../team/types.js';
import { collectUnitTokens, type UnitTokens } from './token-grid.js';

/** What drawing minibatches reads of an update's options (trust-region.ts). */
export interface MinibatchOptions {
  batch: TeamBatch;
  unit: { agentIndices: readonly number[] };
  /** Trajectories that take part (dynamic sampling drops the rest). */
  trajectories: readonly number[];
  settings: { epochs: number; minibatches: number };
}

/**
 * The minibatches of `settings.epochs` epochs over the participating trajectories, each epoch
 * shuffled by `random` when it begins (lazily: an update that stops early draws no further
 * shuffles). A unit on a Tinker service draws its minibatches here too, from the same stream.
 */
export function* minibatches(
  options: MinibatchOptions,
  tokens: UnitTokens,
  random: RandomGenerator,
): Generator<UnitTokens> {
  const { batch, unit, settings } = options;
  const participating = options.trajectories.filter((index) =>
    tokens.rowTrajectories.includes(index),
  );
  if (participating.length === 0 || tokens.totalTokens === 0) return;
  for (let epoch = 0; epoch < settings.epochs; epoch++) {
    const shuffled = random.shuffle([...participating]);
    const size = Math.ceil(shuffled.length / settings.minibatches);
    for (let start = 0; start < shuffled.length; start += size) {
      const minibatch = collectUnitTokens(
        batch,
        unit.agentIndices,
        shuffled.slice(start, start + size),
      );
      if (minibatch.totalTokens > 0) yield minibatch;
    }
  }
}

/**
 * Minibatches drawn one at a time. The first minibatch of an epoch draws the epoch's shuffle
 * from the update's random stream. `peek` draws the next one early (an engine may start on it
 * while the step before is measured); `close` gives a peeked minibatch that was never taken
 * back to the stream, so an update that ends early leaves the stream exactly where drawing only
 * the minibatches stepped on would have: the next agent's update, the next stage and a resumed
 * run draw what they always drew.
 */
export class MinibatchDraws {
  private readonly source: Iterator<UnitTokens>;
  private readonly random: RandomGenerator;
  private peeked: { minibatch: UnitTokens | null; stateBefore: RandomState } | null = null;

  constructor(options: MinibatchOptions, tokens: UnitTokens, random: RandomGenerator) {
    this.source = minibatches(options, tokens, random);
    this.random = random;
  }

  /** The next minibatch, or null after the last. */
  next(): UnitTokens | null {
    const minibatch = this.peek();
    this.peeked = null;
    return minibatch;
  }

  /** The minibatch `next` returns, drawn now if it was not yet. */
  peek(): UnitTokens | null {
    if (!this.peeked) {
      const stateBefore = this.random.getState();
      const drawn = this.source.next();
      this.peeked = { minibatch: drawn.done ? null : drawn.value, stateBefore };
    }
    return this.peeked.minibatch;
  }

  /** Ends the draws; a peeked minibatch never taken gives back its use of the random stream. */
  close(): void {
    if (this.peeked) this.random.setState(this.peeked.stateBefore);
    this.peeked = null;
  }
}
