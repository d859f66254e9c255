import { ConfigError } from '../../util/errors.js';
import type { AgentConfig, TrainConfig } from '../config/train-config.js';
import { loadAgentTokenizer, TinkerAgent, TinkerPolicy } from '../update/tinker/agent.js';
import type { TinkerUnit } from '../update/units.js';
import { unitSettings } from './build-unit.js';

/**
 * The agents of a team that train on a Tinker service (`agents[].engine.tinker`): each gets a
 * session and a LoRA model on its service, a policy that samples there, and (when trainable) a
 * unit the stage updates there. Keyed by agent index.
 */
export async function connectTinkerAgents(
  agentConfigs: readonly AgentConfig[],
  config: TrainConfig,
  environment?: Record<string, string | undefined>,
): Promise<{ policies: Map<number, TinkerPolicy>; units: Map<number, TinkerUnit> }> {
  const policies = new Map<number, TinkerPolicy>();
  const units = new Map<number, TinkerUnit>();
  for (const [index, agentConfig] of agentConfigs.entries()) {
    const settings = agentConfig.engine?.tinker;
    if (!settings) continue;
    const tokenizer = await loadAgentTokenizer(
      settings.tokenizer,
      `agents[${index}].engine.tinker.tokenizer`,
    );
    const agent = await TinkerAgent.connect({
      name: agentConfig.name,
      settings,
      runSeed: config.seed,
      environment,
    });
    policies.set(index, new TinkerPolicy(agent, tokenizer));
    if (agentConfig.trainable)
      units.set(index, {
        kind: 'tinker',
        name: agentConfig.name,
        agent,
        agentIndices: [index],
        ...unitSettings(agentConfig, config),
        adam: {
          beta1: config.optimizer.beta1,
          beta2: config.optimizer.beta2,
          weightDecay: config.optimizer.weightDecay,
        },
      });
  }
  return { policies, units };
}

/** What a run with agents on a Tinker service cannot do (yet), as errors naming the setting. */
export function validateTinkerAgents(
  agentConfigs: readonly AgentConfig[],
  config: TrainConfig,
  sharedModel: boolean,
): void {
  const onService = agentConfigs.filter((agentConfig) => agentConfig.engine);
  if (onService.length === 0) return;
  if (sharedModel)
    throw new ConfigError(
      'schedule',
      'the single-model schedule shares one local model among all roles; agents on a Tinker service (engine.tinker) need teamtr, sequential-stale or joint',
    );
  if (config.trustRegion.rollback)
    throw new ConfigError(
      'trustRegion.rollback',
      'stage rollback is not available with agents on a Tinker service (engine.tinker) yet; drop trustRegion.rollback',
    );
  for (const swap of config.swaps)
    if (onService.some((agentConfig) => agentConfig.name === swap.agent))
      throw new ConfigError(
        'swaps',
        `agent "${swap.agent}" trains on a Tinker service (engine.tinker); swapping it is not available yet — swap a local agent, or drop the swap`,
      );
}
