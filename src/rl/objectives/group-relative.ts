import { agentWiseNormalize, dynamicSamplingFilter, grpoAdvantages } from '../advantages.js';
import type { NumberArray } from '../layout.js';
import { clippedSurrogate } from '../surrogate.js';
import type { AdvantageEstimate, AdvantageInput, ObjectiveSettings, PolicyLoss } from './types.js';

/**
 * Whitened advantages against a baseline per group (GRPO: a group is a prompt; PPO without a
 * value head: the whole batch is one group), then the options every objective shares:
 * agent-wise normalization (Dr. MAS) and DAPO's dynamic sampling, which keeps only prompt
 * groups whose rewards differ.
 */
export function groupRelativeAdvantages(
  input: AdvantageInput & { baselineGroupIds: NumberArray },
): AdvantageEstimate {
  const { rewards, problemIds, agentActs, settings } = input;
  let advantages = grpoAdvantages({
    rewards,
    groupIds: input.baselineGroupIds,
    normalizeStd: true,
    leaveOneOut: settings.leaveOneOut,
  }).advantages;
  if (settings.agentWiseNormalization)
    advantages = agentWiseNormalize({ values: advantages, agentIds: agentActs }).normalized;
  if (!settings.dynamicSampling)
    return {
      advantages,
      keptTrajectories: Array.from({ length: rewards.length }, (_value, index) => index),
      droppedGroups: 0,
    };
  const filter = dynamicSamplingFilter({ rewards, groupIds: problemIds });
  return {
    advantages,
    keptTrajectories: Array.from(filter.keptIndices),
    droppedGroups: filter.droppedGroupCount,
  };
}

/** PPO's clipped surrogate (DAPO's clip-higher when clipHigh > clipLow), aggregated as set. */
export function clippedPolicyLoss(settings: ObjectiveSettings): PolicyLoss {
  return (input) =>
    clippedSurrogate({
      ...input,
      clipLow: settings.clipLow,
      clipHigh: settings.clipHigh,
      aggregation: settings.aggregation,
    });
}
