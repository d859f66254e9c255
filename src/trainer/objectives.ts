import type { LossAggregation } from '../rl/index.js';
import type { TrainConfig } from './config.js';

/** How the loss is built: clip range, aggregation, baseline and sampling filter. */
export interface ObjectiveSettings {
  name: string;
  clipLow: number;
  clipHigh: number;
  aggregation: LossAggregation;
  leaveOneOut: boolean;
  agentWiseNormalization: boolean;
  dynamicSampling: boolean;
  /** GRPO-style group-relative baseline (per prompt); false = one batch-wide baseline. */
  groupBaseline: boolean;
}

type Preset = Pick<
  ObjectiveSettings,
  'clipLow' | 'clipHigh' | 'aggregation' | 'dynamicSampling' | 'groupBaseline'
>;

/**
 * The objectives the paper compares. `ppo` here is the clipped surrogate with a whitened
 * batch-wide reward baseline and no learned value head (see rl/value.ts for GAE, which needs
 * per-token values a value head would provide).
 */
const presets: Record<TrainConfig['objective']['kind'], Preset> = {
  grpo: {
    clipLow: 0.2,
    clipHigh: 0.2,
    aggregation: 'sequence-mean',
    dynamicSampling: false,
    groupBaseline: true,
  },
  dapo: {
    clipLow: 0.2,
    clipHigh: 0.28,
    aggregation: 'token-mean',
    dynamicSampling: true,
    groupBaseline: true,
  },
  ppo: {
    clipLow: 0.2,
    clipHigh: 0.2,
    aggregation: 'token-mean',
    dynamicSampling: false,
    groupBaseline: false,
  },
};

export function resolveObjective(objective: TrainConfig['objective']): ObjectiveSettings {
  const preset = presets[objective.kind];
  return {
    name: objective.kind,
    clipLow: objective.clipLow ?? preset.clipLow,
    clipHigh: objective.clipHigh ?? preset.clipHigh,
    aggregation: objective.aggregation ?? preset.aggregation,
    leaveOneOut: objective.leaveOneOut,
    agentWiseNormalization: objective.agentWiseNormalization,
    dynamicSampling: objective.dynamicSampling ?? preset.dynamicSampling,
    groupBaseline: preset.groupBaseline,
  };
}
