import { nonFiniteParameter } from '../../models/weight-checks.js';
import type { TransformerLM } from '../../nn/transformer.js';
import type { Team } from '../../team/team.js';
import { NonFiniteWeightsError } from '../../util/errors.js';
import type { NonFiniteValue } from '../../util/finite.js';
import type { TrainConfig } from '../config/train-config.js';
import type { BuiltTeam } from '../setup/build-team.js';
import type { RunState } from './run-state.js';
import type { CompletedUpdate, StageHook } from './stage-hooks.js';

/**
 * A diverged model is caught where it happens. Weights change in a stage's updates and, before
 * a stage, in a swap's alignment (the hooks before it); after each, every model of the team in
 * this process is checked for NaN and ±Inf (one subtraction per weight). One is found: the run
 * stops there with the stage, the update or swap, the agent and the weight, before anything of
 * the stage is recorded or saved, so the last checkpoint and metrics.jsonl stay as they were.
 * (Models on a Tinker service are the service's to check.) Registered after the swap hook.
 */
export function divergenceHook(built: BuiltTeam, config: TrainConfig): StageHook<never> {
  return {
    beforeStage: async (state) => {
      const found = firstDiverged(built.team);
      if (found) throw divergedBeforeStage(state.stage + 1, found, config);
      return [];
    },
    afterStage: async (state, _stage, updates) => {
      const found = firstDiverged(built.team);
      if (found) throw divergedInStage(state, updates, found);
      return [];
    },
  };
}

/**
 * Stops the run the moment an update leaves `unit`'s weights non-finite, naming the update.
 * (The trust-region loop already undoes a step whose KL is not finite; this catches whatever
 * else could slip through, before the next agent samples with the model.) Only the parameters
 * that train are read: the others an update leaves as they were.
 */
export function refuseDivergedUpdate(
  team: Team,
  unit: { name: string; agentIndices: readonly number[] },
  where: { stage: number; update: number },
): void {
  const agents = { ...team, agents: unit.agentIndices.map((index) => team.agents[index]!) };
  // An update changes the parameters that train, nothing else: the frozen base (135M weights
  // at SmolLM2's shape, read for each update before) was checked at load and by the hooks.
  const found = firstDiverged(agents, 'trainable');
  if (found)
    throw new NonFiniteWeightsError(
      found.agents.join(', '),
      found.weight,
      `the run diverged in stage ${where.stage}: ${describe(found)} in update ${where.update} of the run (${unit.name}'s); ${nothingSaved(where.stage)} (optimizer.learningRate) or trust-region radius (trustRegion.delta)`,
    );
}

interface Diverged {
  /** Every agent that plays the model (several when one model plays several roles). */
  agents: string[];
  weight: NonFiniteValue;
}

function firstDiverged(team: Team, which: 'all' | 'trainable' = 'all'): Diverged | null {
  const agentsOf = new Map<TransformerLM, string[]>();
  for (const agent of team.agents) {
    const model = agent.policy.model;
    if (model) agentsOf.set(model, [...(agentsOf.get(model) ?? []), agent.name]);
  }
  for (const [model, agents] of agentsOf) {
    const weight = nonFiniteParameter(model, which);
    if (weight) return { agents, weight };
  }
  return null;
}

const nothingSaved = (stage: number): string =>
  `nothing of stage ${stage} was recorded or saved: the last checkpoint and metrics.jsonl are intact. Start a new run with a smaller learning rate`;

function describe({ agents, weight }: Diverged): string {
  const who = agents.length === 1 ? `agent "${agents[0]}"` : `the model of ${agents.join(', ')}`;
  return `${who}'s weight "${weight.name}" became ${weight.value} (element ${weight.index})`;
}

function divergedInStage(
  state: RunState,
  updates: readonly CompletedUpdate[],
  found: Diverged,
): NonFiniteWeightsError {
  const firstOfStage = state.updates - updates.length + 1;
  const made = updates
    .map((update, index) => ({ agent: update.agent, number: firstOfStage + index }))
    .filter((update) => found.agents.includes(update.agent))
    .map((update) => `update ${update.number} of the run (${update.agent}'s)`);
  const by = made.length > 0 ? made.join(', ') : 'no update of its own (a hook after the stage)';
  return new NonFiniteWeightsError(
    found.agents.join(', '),
    found.weight,
    `the run diverged in stage ${state.stage}: ${describe(found)} in ${by}; ${nothingSaved(state.stage)} (optimizer.learningRate) or trust-region radius (trustRegion.delta)`,
  );
}

function divergedBeforeStage(
  stage: number,
  found: Diverged,
  config: TrainConfig,
): NonFiniteWeightsError {
  const swap = config.swaps.find(
    (candidate) => candidate.stage === stage && found.agents.includes(candidate.agent),
  );
  const by = swap
    ? `the swap of ${swap.agent} to ${swap.model} before stage ${stage}, in its ${swap.alignment.steps} alignment steps at learning rate ${swap.alignment.learningRate}`
    : `the hooks before stage ${stage}`;
  return new NonFiniteWeightsError(
    found.agents.join(', '),
    found.weight,
    `the run diverged before stage ${stage}: ${describe(found)} in ${by}; ${nothingSaved(stage)}${swap ? ' (swaps[].alignment.learningRate)' : ''}`,
  );
}
