import type { TransformerLM } from '../../nn/transformer.js';
import type { AdamW } from '../../optim/adamw.js';
import type { TinkerAgent } from './tinker/agent.js';

/**
 * What the trainer updates: an agent's model here, or on a Tinker service. A unit is the one
 * home of an agent's trust-region radius δ and learning rate (setup/build-unit.ts resolves them
 * from the config); what can be done to its model is its engine's (engines.ts). The team
 * runtime's `Agent` knows none of this; it only plays turns.
 */
export type TrainableUnit = LocalUnit | TinkerUnit;

/** A model in this process, with its optimizer. */
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

/**
 * A trainable agent whose model lives on a Tinker service: its weights and Adam state are the
 * service's (`agent.model`); its radius δ and learning rate are kept here like a local unit's.
 */
export interface TinkerUnit {
  kind: 'tinker';
  name: string;
  agent: TinkerAgent;
  agentIndices: number[];
  delta: number;
  learningRate: number;
  /** Adam settings sent with every optim_step (the run's optimizer settings). */
  adam: { beta1: number; beta2: number; weightDecay: number };
}
