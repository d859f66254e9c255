import type { LoadedModel } from '../../models/load.js';
import { AdamW, decayExempt } from '../../optim/adamw.js';
import type { AgentConfig, TrainConfig } from '../config/train-config.js';
import type { LocalUnit } from '../update/units.js';

/**
 * A trainable agent's radius δ and learning rate: its own (agents[].delta, .learningRate), else
 * the run's. An agent that does not train gets δ = 0 (its updates leave it unchanged).
 */
export function unitSettings(
  agentConfig: AgentConfig,
  config: TrainConfig,
): { delta: number; learningRate: number } {
  return {
    delta: agentConfig.trainable ? (agentConfig.delta ?? config.trustRegion.delta) : 0,
    learningRate: agentConfig.learningRate ?? config.optimizer.learningRate,
  };
}

/** The unit of an agent (or, for `single`, of the model shared by `agentIndices`). */
export function buildUnit(options: {
  agentConfig: AgentConfig;
  loaded: LoadedModel;
  agentIndices: number[];
  config: TrainConfig;
}): LocalUnit {
  const { agentConfig, loaded, config } = options;
  const { delta, learningRate } = unitSettings(agentConfig, config);
  return {
    name: agentConfig.name,
    model: loaded.model,
    optimizer: createOptimizer(loaded, learningRate, config),
    agentIndices: options.agentIndices,
    delta,
    learningRate,
    source: loaded.source,
  };
}

/** A fresh AdamW for a unit's model under the run's optimizer settings. */
export function createOptimizer(
  model: LoadedModel,
  learningRate: number,
  config: TrainConfig,
): AdamW {
  return new AdamW(model.model.trainableParameters(), {
    learningRate,
    beta1: config.optimizer.beta1,
    beta2: config.optimizer.beta2,
    epsilon: 1e-8,
    weightDecay: config.optimizer.weightDecay,
    noDecay: decayExempt,
  });
}
