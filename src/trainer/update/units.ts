import type { LoadedModel } from '../../models/load.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { AdamW, decayExempt } from '../../optim/adamw.js';
import type { AgentConfig, TrainConfig } from '../config/train-config.js';
import type { TinkerUnit } from './tinker/unit.js';

export type { TinkerUnit } from './tinker/unit.js';

/** What the trainer updates: a local model, or an agent's model on a Tinker service. */
export type TrainableUnit = LocalUnit | TinkerUnit;

/**
 * A model the trainer updates, with everything its updates need: the one home of an agent's
 * trust-region radius, learning rate and optimizer state. The team runtime's `Agent` knows
 * none of these; it only plays turns.
 */
export interface LocalUnit {
  kind?: 'local';
  /** The agent's name (the shared model's for `single`); names its checkpoint folder. */
  name: string;
  model: TransformerLM;
  optimizer: AdamW;
  /** Agents whose turns it plays: one, or every local agent when one model plays all roles. */
  agentIndices: number[];
  /** Trust-region radius on the token-level KL (agents[].delta, else trustRegion.delta). */
  delta: number;
  /** agents[].learningRate, else optimizer.learningRate. */
  learningRate: number;
  /**
   * Directory the model was loaded from. A checkpoint of a LoRA unit saves only its adapters
   * and refers to this base model for the rest.
   */
  source?: string;
}

/** The unit of an agent (or, for `single`, of the model shared by `agentIndices`). */
export function buildUnit(options: {
  agentConfig: AgentConfig;
  loaded: LoadedModel;
  agentIndices: number[];
  config: TrainConfig;
}): LocalUnit {
  const { agentConfig, loaded, config } = options;
  const learningRate = agentConfig.learningRate ?? config.optimizer.learningRate;
  return {
    name: agentConfig.name,
    model: loaded.model,
    optimizer: createOptimizer(loaded, learningRate, config),
    agentIndices: options.agentIndices,
    delta: agentConfig.trainable ? (agentConfig.delta ?? config.trustRegion.delta) : 0,
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
