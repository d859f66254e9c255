import { TurnDecoder, turnTerminator } from '../team/policy.js';
import { turnTokenLimit, type Team } from '../team/team.js';
import { modelEndpoint, type ServedModel } from './endpoints.js';
import { teamEndpoint } from './team-endpoint.js';

/**
 * What `teamtr serve RUN` serves: each agent with a local model under its name, and the whole
 * team. An agent's endpoint answers as the agent took its turns in training, unless the request
 * says otherwise: its prompt format (the chat template when its tokenizer has one, plain text
 * when not), its turn length as the default max_tokens, its end of turn (a chat model's
 * end-of-turn token, a plain model's newline) and its stop strings, and the run's temperature.
 */

export interface TeamServingOptions {
  /** The model id of the whole team. @default 'team' */
  teamId?: string;
  /** Temperature when a request sets none: the run's rollout.temperature. @default 1 */
  temperature?: number;
  /** Every agent's prompt format, overriding its own. @default each agent's own */
  promptFormat?: 'chat-template' | 'plain';
}

function agentEndpoint(
  team: Team,
  agentIndex: number,
  options: TeamServingOptions,
): ServedModel | null {
  const agent = team.agents[agentIndex]!;
  const { model, tokenizer } = agent.policy;
  if (!model) return null;
  const turns = new TurnDecoder(tokenizer);
  const eos = tokenizer.eosId === undefined ? [] : [tokenizer.eosId];
  return modelEndpoint({
    id: agent.name,
    model,
    tokenizer,
    ...(options.promptFormat ? { promptFormat: options.promptFormat } : {}),
    defaultMaxTokens: turnTokenLimit(team, agentIndex),
    ...(options.temperature !== undefined ? { defaultTemperature: options.temperature } : {}),
    // A plain model's turn is one line: the newline ends it as a string, so that a token such as
    // ".\n" keeps its ".", as the team runtime's turn text does.
    stopTokenIds: turns.chat ? turns.stopIds : eos,
    stopStrings: [...(turns.chat ? [] : [turnTerminator]), ...(agent.stop ?? [])],
  });
}

/** The run's agents (those with a local model) under their names, then the whole team. */
export function teamEndpoints(team: Team, options: TeamServingOptions = {}): ServedModel[] {
  const agents = team.agents.flatMap((_agent, index) => agentEndpoint(team, index, options) ?? []);
  return [
    ...agents,
    teamEndpoint(options.teamId ?? 'team', team, {
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    }),
  ];
}
