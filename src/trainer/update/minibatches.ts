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
  random: RandomGenerator;
}

/**
 * The minibatches of `settings.epochs` epochs over the participating trajectories, each epoch
 * shuffled when it begins (lazily: an update that stops early draws no further shuffles). A
 * unit on a Tinker service draws its minibatches here too, from the same random stream.
 */
export function* minibatches(options: MinibatchOptions, tokens: UnitTokens): Generator<UnitTokens> {
  const { batch, unit, settings } = options;
  const participating = options.trajectories.filter((index) =>
    tokens.rowTrajectories.includes(index),
  );
  if (participating.length === 0 || tokens.totalTokens === 0) return;
  for (let epoch = 0; epoch < settings.epochs; epoch++) {
    const shuffled = options.random.shuffle([...participating]);
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
 * Minibatches drawn one at a time, each before the measurement that decides whether it is
 * stepped on (that measurement shares its forward pass). The first minibatch of an epoch draws
 * the epoch's shuffle from the update's random stream; `putBack` returns the stream to where it
 * was before the last draw, so an update that ends before stepping on a drawn minibatch leaves
 * the stream exactly where drawing only the minibatches stepped on would have: the next
 * agent's update, the next stage and a resumed run draw what they always drew.
 */
export class MinibatchDraws {
  private readonly source: Iterator<UnitTokens>;
  private readonly random: RandomGenerator;
  private stateBeforeLastDraw: RandomState | null = null;

  constructor(options: MinibatchOptions, tokens: UnitTokens) {
    this.source = minibatches(options, tokens);
    this.random = options.random;
  }

  /** The next minibatch, or null after the last. */
  next(): UnitTokens | null {
    this.stateBeforeLastDraw = this.random.getState();
    const drawn = this.source.next();
    return drawn.done ? null : drawn.value;
  }

  /** Undoes the last draw's use of the random stream (the minibatch is not stepped on). */
  putBack(): void {
    if (this.stateBeforeLastDraw) this.random.setState(this.stateBeforeLastDraw);
  }
}
