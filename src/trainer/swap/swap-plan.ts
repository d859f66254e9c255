import { loadModel, type LoadedModel } from '../../models/load.js';
import type { Task } from '../../tasks/index.js';
import { LocalPolicy } from '../../team/policy.js';
import { renderAgentInput, speakerTagFor, type SharedTurn } from '../../team/render.js';
import { ConfigError, TeamtrError } from '../../util/errors.js';
import { resolveAlignmentMode, sharesVocabulary } from './alignment.js';
import { defaultAgents } from '../setup/build-team.js';
import type { AgentConfig, SwapConfig, TrainConfig } from '../config/train-config.js';
import type { SwapProgress } from '../run/run-state.js';

/**
 * Which model each agent has at each stage, and whether a planned swap can work, decided from
 * the config alone (docs/method.md §6). A swap at stage K takes effect right before stage K runs, so
 * a team resumed from a checkpoint of stage S is built with every swap of stage ≤ S already in
 * place (new architecture and tokenizer), and then the checkpoint's weights are loaded into it.
 */

/** The agent's config once `swap` brought its model in. */
export function swappedAgentConfig(agentConfig: AgentConfig, swap: SwapConfig): AgentConfig {
  const local = { ...agentConfig };
  delete local.endpoint; // the incoming model is local
  return {
    ...local,
    model: swap.model,
    rolePrompt: swap.rolePrompt ?? agentConfig.rolePrompt,
    learningRate: swap.learningRate ?? agentConfig.learningRate,
  };
}

/** Agent configs after every swap scheduled at or before `throughStage`, in stage order. */
export function agentConfigsAtStage(
  config: TrainConfig,
  task: Task,
  throughStage: number,
): AgentConfig[] {
  const agents = [...(config.agents ?? defaultAgents(task))];
  const due = config.swaps
    .filter((swap) => swap.stage <= throughStage)
    .sort((a, b) => a.stage - b.stage);
  for (const swap of due) {
    const index = agents.findIndex((agent) => agent.name === swap.agent);
    if (index >= 0) agents[index] = swappedAgentConfig(agents[index]!, swap);
  }
  return agents;
}

/** The config to build the team of a run whose last completed stage is `completedStage`. */
export function configAtStage(
  config: TrainConfig,
  task: Task,
  completedStage: number,
): TrainConfig {
  return config.swaps.length === 0
    ? config
    : { ...config, agents: agentConfigsAtStage(config, task, completedStage) };
}

/**
 * Refuses swaps that cannot work, before anything is written: an unknown or frozen agent, a
 * shared-model schedule, a model that is missing or cannot play the role (tokenizer without
 * the task's characters or a turn terminator, context longer than its maxPositions), `kl`
 * alignment across tokenizers, two swaps of one agent at one stage, and (on resume) swaps
 * scheduled at or before the checkpoint that were never applied.
 */
export async function validateSwaps(
  config: TrainConfig,
  task: Task,
  options: {
    completedStage: number;
    applied: SwapProgress['applied'];
    /** The run's schedule plays every role with one model. */
    sharedModel: boolean;
  },
): Promise<void> {
  if (config.swaps.length === 0) return;
  if (options.sharedModel) {
    throw new ConfigError(
      'swaps',
      `schedule "${config.schedule}" plays every role with one model; swaps need one model per agent`,
    );
  }
  const seen = new Set<string>();
  for (const [index, swap] of config.swaps.entries()) {
    const where = `swaps[${index}]`;
    const key = `${swap.stage}/${swap.agent}`;
    if (seen.has(key))
      throw new ConfigError(
        where,
        `agent "${swap.agent}" is already swapped at stage ${swap.stage}; one swap per agent and stage`,
      );
    seen.add(key);
    if (swap.stage <= options.completedStage) {
      const applied = options.applied.find((entry) => entry.index === index);
      if (
        !applied ||
        applied.stage !== swap.stage ||
        applied.agent !== swap.agent ||
        applied.model !== swap.model
      ) {
        throw new ConfigError(
          where,
          `stage ${swap.stage} is at or before the checkpoint's stage ${options.completedStage} but this swap was never applied there; schedule it at stage ${options.completedStage + 1} or later`,
        );
      }
      continue;
    }
    await validatePendingSwap(config, task, swap, where);
  }
  for (const applied of options.applied) {
    const swap = config.swaps[applied.index];
    if (
      !swap ||
      swap.stage !== applied.stage ||
      swap.agent !== applied.agent ||
      swap.model !== applied.model
    ) {
      throw new ConfigError(
        'swaps',
        `the swap of "${applied.agent}" applied at stage ${applied.stage} is no longer listed as swaps[${applied.index}]; restore it in config.json`,
      );
    }
  }
}

async function validatePendingSwap(
  config: TrainConfig,
  task: Task,
  swap: SwapConfig,
  where: string,
): Promise<void> {
  const agents = agentConfigsAtStage(config, task, swap.stage - 1);
  const agentIndex = agents.findIndex((agent) => agent.name === swap.agent);
  if (agentIndex < 0)
    throw new ConfigError(
      `${where}.agent`,
      `"${swap.agent}" is not an agent of this run (agents: ${agents.map((agent) => agent.name).join(', ')})`,
    );
  if (!agents[agentIndex]!.trainable)
    throw new ConfigError(
      `${where}.agent`,
      `"${swap.agent}" is frozen (trainable: false); only trainable agents can be swapped`,
    );
  const incoming = await loadForSwap(swap.model, `${where}.model`);
  try {
    checkPlaysRole(
      incoming,
      config,
      task,
      agents,
      agentIndex,
      swapSpeaker(swappedAgentConfig(agents[agentIndex]!, swap), agentIndex, task),
      `${where}.model`,
    );
    if (swap.alignment.mode !== 'sft') {
      const outgoing = await loadForSwap(
        agents[agentIndex]!.model!, // trainable agents are local (config schema)
        `${where} (outgoing model)`,
      );
      try {
        resolveAlignmentMode(
          swap.alignment.mode,
          sharesVocabulary(outgoing, incoming),
          `${where}.alignment.mode`,
        );
      } finally {
        outgoing.model.destroy();
      }
    }
  } finally {
    incoming.model.destroy();
  }
}

async function loadForSwap(spec: string, where: string): Promise<LoadedModel> {
  try {
    return await loadModel(spec);
  } catch (error) {
    if (error instanceof TeamtrError) throw new ConfigError(where, error.message);
    throw error;
  }
}

function swapSpeaker(
  agentConfig: AgentConfig,
  index: number,
  task: Task,
): { rolePrompt: string; speakerTag: string } {
  return {
    rolePrompt: agentConfig.rolePrompt ?? task.protocol.roles[index]?.prompt ?? '',
    speakerTag: agentConfig.speakerTag ?? speakerTagFor(index),
  };
}

/** The incoming model must end turns, cover the role's text, and fit its longest context. */
function checkPlaysRole(
  incoming: LoadedModel,
  config: TrainConfig,
  task: Task,
  agents: AgentConfig[],
  agentIndex: number,
  speaker: { rolePrompt: string; speakerTag: string },
  where: string,
): void {
  let policy: LocalPolicy;
  try {
    policy = new LocalPolicy(incoming.model, incoming.tokenizer);
  } catch (error) {
    throw new ConfigError(
      where,
      `${incoming.source} cannot play a turn: ${(error as Error).message}`,
    );
  }
  const tags = agents.map((agent, index) => swapSpeaker(agent, index, task).speakerTag);
  const missing = uncoveredCharacters(
    incoming,
    `${task.alphabet}${speaker.rolePrompt}${tags.join('')}`,
  );
  if (missing.length > 0) {
    throw new ConfigError(
      where,
      `the tokenizer of ${incoming.source} cannot encode ${missing.map((character) => JSON.stringify(character)).join(', ')}, which the task and the team's turns use; pick a model whose tokenizer covers them`,
    );
  }
  const turnOrder = config.protocol.turnOrder ?? [...task.protocol.turnOrder];
  const maxTurnTokens = config.protocol.maxTurnTokens ?? task.protocol.maxTurnChars + 2;
  const needed =
    longestInputTokens(policy, task, turnOrder, agentIndex, speaker, tags, maxTurnTokens) +
    maxTurnTokens;
  if (needed > incoming.model.config.maxPositions) {
    throw new ConfigError(
      where,
      `${incoming.source} has maxPositions ${incoming.model.config.maxPositions} but the role needs about ${needed} (its longest context plus maxTurnTokens ${maxTurnTokens})`,
    );
  }
}

function uncoveredCharacters(incoming: LoadedModel, text: string): string[] {
  const { tokenizer } = incoming;
  const missing = new Set<string>();
  for (const character of new Set(text)) {
    try {
      if (tokenizer.unkId !== undefined && tokenizer.encode(character).includes(tokenizer.unkId))
        missing.add(character);
    } catch {
      missing.add(character);
    }
  }
  return [...missing];
}

/** Token count of the agent's longest rendered input: longest prompt, every earlier turn full. */
function longestInputTokens(
  policy: LocalPolicy,
  task: Task,
  turnOrder: number[],
  agentIndex: number,
  speaker: { rolePrompt: string; speakerTag: string },
  tags: string[],
  maxTurnTokens: number,
): number {
  const lastTurn = turnOrder.lastIndexOf(agentIndex);
  const filler = Array.from(
    { length: Math.max(0, maxTurnTokens - 1) },
    (_unused, index) => task.alphabet[index % Math.max(1, task.alphabet.length)] ?? 'x',
  ).join('');
  const earlier: SharedTurn[] = turnOrder
    .slice(0, Math.max(0, lastTurn))
    .map((speakerIndex) => ({ speakerTag: tags[speakerIndex] ?? '', text: filler }));
  const prompts = task.split('train', { seed: 0, count: 64 }).map((problem) => problem.prompt);
  return Math.max(
    0,
    ...prompts.map(
      (prompt) => policy.encodeInput(renderAgentInput(speaker, prompt, earlier)).length,
    ),
  );
}
