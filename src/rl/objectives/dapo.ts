import { clippedPolicyLoss, groupRelativeAdvantages } from './group-relative.js';
import type { Objective } from './types.js';

/**
 * DAPO (Yu et al. 2025): GRPO's advantages with clip-higher, token-level loss aggregation, and
 * dynamic sampling that drops prompt groups whose rewards are all equal.
 */
export const dapo: Objective = {
  name: 'dapo',
  description: 'GRPO advantages, clip-higher (0.2/0.28), token-mean loss, dynamic sampling',
  defaults: { clipLow: 0.2, clipHigh: 0.28, aggregation: 'token-mean', dynamicSampling: true },
  advantages: (input) => groupRelativeAdvantages({ ...input, baselineGroupIds: input.problemIds }),
  policyLoss: clippedPolicyLoss,
};
