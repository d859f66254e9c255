import { clippedPolicyLoss, groupRelativeAdvantages } from './group-relative.js';
import type { Objective } from './types.js';

/** GRPO (Shao et al. 2024): group-normalized team reward per prompt, no critic. */
export const grpo: Objective = {
  name: 'grpo',
  description: 'group-relative advantages per prompt, symmetric clip, sequence-mean loss',
  defaults: { clipLow: 0.2, clipHigh: 0.2, aggregation: 'sequence-mean', dynamicSampling: false },
  advantages: (input) => groupRelativeAdvantages({ ...input, baselineGroupIds: input.problemIds }),
  policyLoss: clippedPolicyLoss,
};
