import { ConfigError } from '../../util/errors.js';
import { loadModel, type LoadedModel } from '../../models/load.js';
import { LocalPolicy, type AgentPolicy } from '../../team/policy.js';
import { RemotePolicy } from '../../team/remote-policy.js';
import { attachLora } from '../../models/lora-config.js';
import { applyWeightsDtype } from '../../models/weights-dtype.js';
import { SharedBases } from '../../models/shared-bases.js';
import { RandomGenerator } from '../../util/random.js';
import { speakerTagFor } from '../../team/render.js';
import type { Agent, Team } from '../../team/team.js';
import type { Task } from '../../tasks/index.js';
import type { AgentConfig, TrainConfig } from '../config/train-config.js';
import type { TrainableUnit } from '../update/units.js';
import { buildUnit } from './build-unit.js';
import { connectTinkerAgents, validateTinkerAgents } from './connect-tinker.js';

export interface BuiltTeam {
  team: Team;
  /** Trainable units in agent order. */
  units: TrainableUnit[];
  /** Agent configs after defaults (what the run directory records). */
  agentConfigs: AgentConfig[];
  models: LoadedModel[];
  /**
   * The frozen bases the team's agents share (one per checkpoint and weights dtype); a swap
   * loads its newcomer through it, so it shares with the agents still there.
   */
  sharedBases: SharedBases;
}

/**
 * The default team of a task: one built-in model per role, or, when one model plays every
 * role (the `single` baseline), the built-in model pretrained on all roles.
 */
export function defaultAgents(task: Task, sharedModel = false): AgentConfig[] {
  // Only a generated task can have built-in base models: `teamtr pretrain` trains them on
  // its demonstrations. A dataset or a task in code needs the user's models.
  if (!task.demonstrator) {
    const roles = task.protocol.roles.map((role) => role.name);
    throw new ConfigError(
      'agents',
      `task "${task.name}" has no built-in models (teamtr pretrain builds them only for the ` +
        `generated tasks); give a model per role (${roles.join(', ')}), e.g. agents: ` +
        `[${roles
          .map((role) => `{ name: ${role}, model: ./models/Qwen2.5-0.5B-Instruct }`)
          .slice(0, 2)
          .join(', ')}${roles.length > 2 ? ', …' : ''}] ` +
        '(a Hugging Face directory, a teamtr model directory, or an endpoint)',
    );
  }
  return task.protocol.roles.map((role, index) => ({
    name: role.name,
    model: sharedModel ? `builtin:${task.name}/shared` : `builtin:${task.name}/role-${index}`,
    trainable: true,
  }));
}

/** Loads every agent's model and assembles the team, its protocol and its update units. */
export async function buildTeam(
  config: TrainConfig,
  task: Task,
  /** The run's schedule (trainer/schedules.ts): whether one model plays every role. */
  schedule: { sharedModel: boolean },
): Promise<BuiltTeam> {
  const agentConfigs = config.agents ?? defaultAgents(task, schedule.sharedModel);
  validateAgents(agentConfigs, config, task, schedule.sharedModel);
  const sharedBases = new SharedBases();
  const loaded = schedule.sharedModel
    ? [await loadAgentModel(agentConfigs[0]!, config.seed, sharedBases)]
    : await loadAll(agentConfigs, config.seed, sharedBases);
  const models = loaded.filter((entry): entry is LoadedModel => entry !== null);
  const tinker = await connectTinkerAgents(agentConfigs, config);
  const agents: Agent[] = agentConfigs.map((agentConfig, index) =>
    agentFromConfig({
      agentConfig,
      index,
      loaded: loaded[schedule.sharedModel ? 0 : index] ?? null,
      task,
      policy: tinker.policies.get(index),
    }),
  );
  const turnOrder = config.protocol.turnOrder ?? [...task.protocol.turnOrder];
  const team: Team = {
    agents,
    protocol: {
      turnOrder,
      answerTurn:
        config.protocol.answerTurn ??
        (config.protocol.turnOrder ? turnOrder.length - 1 : task.protocol.answerTurn),
      permutePerEpisode: config.protocol.permutePerEpisode,
      maxTurnTokens: config.protocol.maxTurnTokens ?? task.protocol.maxTurnChars + 2,
    },
  };
  const units: TrainableUnit[] = schedule.sharedModel
    ? [
        buildUnit({
          agentConfig: agentConfigs[0]!,
          loaded: loaded[0]!,
          // The shared model plays every role except those of remote agents.
          agentIndices: agents.flatMap((agent, index) => (agent.policy.model ? [index] : [])),
          config,
        }),
      ]
    : agentConfigs.flatMap((agentConfig, index): TrainableUnit[] =>
        tinker.units.has(index)
          ? [tinker.units.get(index)!]
          : agentConfig.trainable
            ? [buildUnit({ agentConfig, loaded: loaded[index]!, agentIndices: [index], config })]
            : [],
      );
  return { team, units, agentConfigs, models, sharedBases };
}

/**
 * One team member from its config and loaded model (null for a remote agent); also used when a
 * swap brings a model in.
 */
export function agentFromConfig(options: {
  agentConfig: AgentConfig;
  index: number;
  /** Null for a remote agent or one on a training service. */
  loaded: LoadedModel | null;
  task: Task;
  /** The policy of an agent on a training service (connect-tinker.ts). */
  policy?: AgentPolicy;
}): Agent {
  const { agentConfig, index, loaded: source, task } = options;
  const policy =
    options.policy ??
    (agentConfig.endpoint
      ? new RemotePolicy(agentConfig.endpoint, {}, `agents[${index}].endpoint`)
      : new LocalPolicy(source!.model, source!.tokenizer));
  return {
    name: agentConfig.name,
    rolePrompt: agentConfig.rolePrompt ?? task.protocol.roles[index]?.prompt ?? '',
    speakerTag: agentConfig.speakerTag ?? speakerTagFor(index),
    ...(agentConfig.maxTurnTokens !== undefined
      ? { maxTurnTokens: agentConfig.maxTurnTokens }
      : {}),
    ...(agentConfig.stop !== undefined ? { stop: agentConfig.stop } : {}),
    policy,
  };
}

/**
 * A local agent's model, with LoRA adapters attached right after loading (before its optimizer
 * is created and before a checkpoint is restored onto it); null for a remote agent. An agent
 * whose base stays frozen (LoRA, or not trainable) gets it from `sharedBases`, shared with the
 * other such agents on the same checkpoint and weights dtype; one that trains its full model
 * loads a copy of its own.
 */
export async function loadAgentModel(
  agentConfig: AgentConfig,
  seed: number,
  sharedBases: SharedBases,
): Promise<LoadedModel | null> {
  if (agentConfig.endpoint || agentConfig.engine) return null;
  const where = `agents[name=${agentConfig.name}].weightsDtype`;
  const trainsFully = agentConfig.trainable && !agentConfig.lora;
  if (!trainsFully) {
    // The shared base is frozen and in its dtype already; adapters go on this agent's own tree.
    const loaded = await sharedBases.load(agentConfig.model!, {
      agentName: agentConfig.name,
      weightsDtype: agentConfig.weightsDtype,
      where,
    });
    if (agentConfig.lora)
      await attachLora(
        loaded.model,
        agentConfig.lora,
        new RandomGenerator(`${seed}/lora/${agentConfig.name}`),
      );
    return loaded;
  }
  const loaded = await loadModel(agentConfig.model!);
  // Refuses bfloat16 (it holds frozen weights only), naming the setting.
  applyWeightsDtype(loaded.model, agentConfig.weightsDtype, { trainsFully, where });
  return loaded;
}

async function loadAll(
  agentConfigs: readonly AgentConfig[],
  seed: number,
  sharedBases: SharedBases,
): Promise<Array<LoadedModel | null>> {
  const result: Array<LoadedModel | null> = [];
  for (const agentConfig of agentConfigs)
    result.push(await loadAgentModel(agentConfig, seed, sharedBases));
  return result;
}

function validateAgents(
  agentConfigs: readonly AgentConfig[],
  config: TrainConfig,
  task: Task,
  sharedModel: boolean,
): void {
  validateTinkerAgents(agentConfigs, config, sharedModel);
  const names = new Set<string>();
  agentConfigs.forEach((agentConfig, index) => {
    if (names.has(agentConfig.name))
      throw new ConfigError(
        `agents[${index}].name`,
        `"${agentConfig.name}" is used twice; agent names must be unique`,
      );
    names.add(agentConfig.name);
  });
  if (agentConfigs.every((agentConfig) => agentConfig.endpoint))
    throw new ConfigError(
      'agents',
      'every agent is remote (endpoint); at least one needs a local "model" to train',
    );
  if (!agentConfigs.some((agentConfig) => agentConfig.trainable))
    throw new ConfigError(
      'agents',
      'no agent is trainable; set "trainable": true on at least one agent with a local model',
    );
  if (sharedModel && agentConfigs[0]!.endpoint)
    throw new ConfigError('agents[0]', 'the single-model schedule needs a local model for agent 0');
  if (config.protocol.turnOrder === undefined) {
    const roles = Math.max(...task.protocol.turnOrder) + 1;
    if (roles > agentConfigs.length)
      throw new ConfigError(
        'agents',
        `task "${task.name}" has ${roles} roles (turn order ${JSON.stringify(task.protocol.turnOrder)}) but the team has ${agentConfigs.length} agent${agentConfigs.length === 1 ? '' : 's'}; list one agent per role, or set protocol.turnOrder to say who plays each turn (e.g. ${JSON.stringify(task.protocol.turnOrder.map(() => 0))} for one agent playing every turn)`,
      );
  }
  const turnOrder = config.protocol.turnOrder ?? task.protocol.turnOrder;
  turnOrder.forEach((agentIndex, turn) => {
    if (agentIndex >= agentConfigs.length) {
      throw new ConfigError(
        `protocol.turnOrder[${turn}]`,
        `agent ${agentIndex} does not exist (the team has ${agentConfigs.length} agents: 0..${agentConfigs.length - 1})`,
      );
    }
  });
  const answerTurn = config.protocol.answerTurn;
  if (answerTurn !== undefined && answerTurn >= turnOrder.length) {
    throw new ConfigError(
      'protocol.answerTurn',
      `${answerTurn} is past the last turn (${turnOrder.length - 1})`,
    );
  }
}
