/**
 * The registry of objectives (verl's register_adv_est / register_policy_loss idea): each is a
 * pure advantage estimator and policy loss in its own file. To add one, write the file and add
 * it here; the config schema's `objective.kind` and the trainer pick it up from this table.
 */
import { dapo } from './dapo.js';
import { grpo } from './grpo.js';
import { ppo } from './ppo.js';
import type { Objective, ObjectiveSettings } from './types.js';

export const objectives = { grpo, dapo, ppo } as const satisfies Record<string, Objective>;
export type ObjectiveName = keyof typeof objectives;
export const objectiveNames = Object.keys(objectives) as [ObjectiveName, ...ObjectiveName[]];

/** An objective's settings: the config's values where given, the objective's defaults otherwise. */
export function resolveObjectiveSettings(
  objective: Objective,
  overrides: Partial<ObjectiveSettings> &
    Pick<ObjectiveSettings, 'leaveOneOut' | 'agentWiseNormalization'>,
): ObjectiveSettings {
  return {
    clipLow: overrides.clipLow ?? objective.defaults.clipLow,
    clipHigh: overrides.clipHigh ?? objective.defaults.clipHigh,
    aggregation: overrides.aggregation ?? objective.defaults.aggregation,
    leaveOneOut: overrides.leaveOneOut,
    agentWiseNormalization: overrides.agentWiseNormalization,
    dynamicSampling: overrides.dynamicSampling ?? objective.defaults.dynamicSampling,
  };
}

export * from './types.js';
export { clippedPolicyLoss, groupRelativeAdvantages } from './group-relative.js';
