import type { TinkerAgent } from './agent.js';

/**
 * A trainable agent whose model lives on a Tinker service: the trainer's view of it. Its
 * weights and Adam state are the service's (`agent.model`); its radius δ and learning rate are
 * kept here like a local unit's.
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
