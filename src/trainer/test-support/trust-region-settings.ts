import { clippedPolicyLoss } from '../../rl/index.js';
import type { TrustRegionSettings } from '../update/trust-region.js';

/**
 * The trust-region settings the update tests share: PPO's symmetric 0.2 clip, sequence-mean
 * aggregation, line-search back-off, gradient norm clipped at 1; epochs and minibatches given.
 */
export function clippedSettings(epochs: number, minibatches: number): TrustRegionSettings {
  return {
    epochs,
    minibatches,
    backoff: 'line-search',
    maxGradNorm: 1,
    policyLoss: clippedPolicyLoss({
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'sequence-mean',
      leaveOneOut: false,
      agentWiseNormalization: false,
      dynamicSampling: false,
    }),
  };
}
