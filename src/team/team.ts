import type { AgentPolicy } from './policy.js';

/**
 * One member of a team: what a rollout needs to play its turns. Whether and how it is trained
 * (δ, learning rate, optimizer) is the trainer's business (trainer/units.ts).
 */
export interface Agent {
  name: string;
  /** Prepended to this agent's rendered input. */
  rolePrompt: string;
  /** Written before each of this agent's turns in the shared context, e.g. "A:". */
  speakerTag: string;
  policy: AgentPolicy;
  /** Longest turn of this agent in tokens. @default the protocol's maxTurnTokens */
  maxTurnTokens?: number;
  /** Strings that end this agent's turn early (CompletionSettings.stop). */
  stop?: readonly string[];
}

/** The most tokens one turn of agent `agentIndex` may take. */
export function turnTokenLimit(team: Team, agentIndex: number): number {
  return team.agents[agentIndex]?.maxTurnTokens ?? team.protocol.maxTurnTokens;
}

/** Who speaks when. */
export interface Protocol {
  /** Agent index of each turn in speaking order, e.g. [0, 1, 2] or [0, 1, 2, 0, 1, 2]. */
  turnOrder: number[];
  /** Index into turnOrder of the turn whose text the verifier scores. @default last */
  answerTurn: number;
  /** Shuffle the speakers over the turn slots for every episode. @default false */
  permutePerEpisode: boolean;
  /** Longest turn in tokens. */
  maxTurnTokens: number;
}

export interface Team {
  agents: Agent[];
  protocol: Protocol;
}

/** True when the protocol lets one agent speak more than once (suffix resampling is then invalid). */
export function hasSeveralRounds(protocol: Protocol): boolean {
  return new Set(protocol.turnOrder).size !== protocol.turnOrder.length;
}

/** The turn at which an agent first speaks under the fixed order, or -1. */
export function firstTurnOf(protocol: Protocol, agentIndex: number): number {
  return protocol.turnOrder.indexOf(agentIndex);
}
