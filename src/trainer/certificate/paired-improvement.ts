import { measuredImprovement } from '../../rl/index.js';
import type { TeamBatch } from '../../team/types.js';

/**
 * Change in mean reward between two batches of the same prompts, paired per prompt group: what
 * an update (or a stage, or a swap) measurably did, the yardstick of its certificate.
 */
export function pairedImprovement(
  before: TeamBatch,
  after: TeamBatch,
): { improvement: number; standardError: number } {
  const result = measuredImprovement({
    rewardsBefore: before.trajectories.map((trajectory) => trajectory.reward),
    rewardsAfter: after.trajectories.map((trajectory) => trajectory.reward),
    paired: true,
    groupIdsBefore: before.trajectories.map((trajectory) => trajectory.problemIndex),
    groupIdsAfter: after.trajectories.map((trajectory) => trajectory.problemIndex),
  });
  return { improvement: result.improvement, standardError: result.standardError };
}
