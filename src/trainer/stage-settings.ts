import { objectives, resolveObjectiveSettings } from '../rl/index.js';
import type { TrainConfig } from './config/train-config.js';
import type { StageSettings } from './stage.js';

/** How every stage of the run samples, updates and certifies, from the config. */
export function resolveStageSettings(config: TrainConfig): StageSettings {
  const objective = objectives[config.objective.kind];
  const objectiveSettings = resolveObjectiveSettings(objective, config.objective);
  const { epochs, minibatches, backoff, maxGradNorm } = config.trustRegion;
  return {
    schedule: config.schedule,
    rollout: {
      groupSize: config.rollout.groupSize,
      temperature: config.rollout.temperature,
      suffixResampling: config.rollout.suffixResampling,
    },
    updateOrder: config.updateOrder,
    objective,
    objectiveSettings,
    trustRegion: {
      epochs,
      minibatches,
      backoff,
      maxGradNorm,
      policyLoss: objective.policyLoss(objectiveSettings),
    },
    certificate: {
      epsilon: config.certificate.epsilon,
      confidence: config.certificate.confidence,
    },
  };
}
