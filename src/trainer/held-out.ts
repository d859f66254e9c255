import type { Problem } from '../tasks/index.js';
import type { TeamBatch } from '../team/types.js';
import { pairedImprovement } from './certificate/paired-improvement.js';
import type { StageRollouts } from './stage-rollout.js';

/**
 * The team on a stage's held-out prompts, prompts no update of the stage trains on: the batch
 * before an update is the evidence of its out-of-sample certificate, and the batch drawn again
 * after it (same prompts and random streams, prefix reused as in Stage.sample) measures it.
 * Their tokens are measurement tokens, outside the training budget.
 */
export class HeldOutPrompts {
  measurementTokens = 0;
  /** The latest batch: the team as it is now, until the next update. */
  private latest: TeamBatch | null = null;

  constructor(
    private readonly rollouts: StageRollouts,
    private readonly problems: Problem[],
    private readonly seed: string,
  ) {}

  /** The team as it is now on the held-out prompts (drawn the first time it is asked). */
  async current(): Promise<TeamBatch> {
    this.latest ??= await this.draw(undefined);
    return this.latest;
  }

  /**
   * The paired change from the batch before an update of the agents `changed` to one drawn
   * now, which becomes the current batch.
   */
  async measureAfter(
    changed: readonly number[],
  ): Promise<{ improvement: number; standardError: number }> {
    const previous = this.latest;
    if (!previous)
      throw new Error('HeldOutPrompts.measureAfter: no batch before the update (call current)');
    this.latest = await this.draw({ previous, changed });
    return pairedImprovement(previous, this.latest);
  }

  private async draw(
    reuseAfter: { previous: TeamBatch; changed: readonly number[] } | undefined,
  ): Promise<TeamBatch> {
    const batch = await this.rollouts.draw(this.problems, this.seed, reuseAfter);
    this.measurementTokens += batch.generatedTokens;
    return batch;
  }
}
