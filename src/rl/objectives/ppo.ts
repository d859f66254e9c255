import { clippedPolicyLoss, groupRelativeAdvantages } from './group-relative.js';
import type { Objective } from './types.js';

/**
 * PPO's clipped surrogate with a whitened batch-wide reward baseline and no learned value head
 * (value.ts has GAE, which needs the per-token values a value head would provide).
 */
export const ppo: Objective = {
  name: 'ppo',
  description: 'batch-wide whitened reward baseline, symmetric clip, token-mean loss',
  defaults: { clipLow: 0.2, clipHigh: 0.2, aggregation: 'token-mean', dynamicSampling: false },
  advantages: (input) =>
    groupRelativeAdvantages({
      ...input,
      baselineGroupIds: new Float64Array(input.rewards.length),
    }),
  policyLoss: clippedPolicyLoss,
};
