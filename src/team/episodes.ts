import { RandomGenerator } from '../util/random.js';
import type { Completion, CompletionRequest } from './policy.js';
import { renderForAgent } from './render.js';
import { turnTokenLimit, type Team } from './team.js';
import type { Episode, TurnRecord } from './types.js';

/**
 * How a team plays: the one path by which the trainer samples its batches (rollout.ts) and a
 * server answers a request for the whole team (src/serve). Each agent's turns take its own
 * limits (maxTurnTokens, stop strings) and its own prompt format (its policy renders the
 * shared context, as chat messages for an instruct model); the random streams are named by
 * (seed, episode, turn), so the same seed gives the same tokens on either side.
 */

/** A token as an agent draws it, and where in the batch it falls (for streaming). */
export interface DrawnToken {
  episodeIndex: number;
  turnIndex: number;
  agentIndex: number;
  token: number;
  logProb: number;
}

export interface EpisodeOptions {
  team: Team;
  /** The problem text of each group. */
  prompts: readonly string[];
  /** G: episodes per prompt. */
  groupSize: number;
  /**
   * Seed of the batch's random streams. Episode j's turn k always draws from the stream
   * (seed, j, k), so two batches with the same seed use common random numbers: an agent
   * whose policy and context did not change samples the same tokens.
   */
  seed: string;
  /** Sampling temperature. @default 1 */
  temperature?: number;
  /** Play only turns fromTurn..end; the turns before it are `previous`'s (suffix resampling). */
  reuse?: { previous: readonly Episode[]; fromTurn: number };
  /** Agents whose turns keep the hidden states that predicted their tokens. */
  keepHiddenStatesOf?: readonly number[];
  /**
   * Tokens one episode may generate over all its turns (a served request's max_tokens): the
   * turn that reaches it is cut there (finishReason 'length') and no later turn is played.
   * @default no bound beyond each turn's own
   */
  maxEpisodeTokens?: number;
  /** Each token as an agent draws it (policies that sample locally report them). */
  onToken?: (drawn: DrawnToken) => void;
  /** Checked before each turn: once aborted, playing stops by throwing the signal's reason. */
  signal?: AbortSignal;
}

export interface PlayedEpisodes {
  /** Ordered prompt by prompt, then sample by sample: index = problemIndex·G + sampleIndex. */
  episodes: Episode[];
  /** Tokens the policies generated (reused turns excluded). */
  generatedTokens: number;
}

/** Per-episode speaking order: the protocol's, or a seeded shuffle of it. */
function speakingOrder(team: Team, seed: string, episodeIndex: number): number[] {
  const order = [...team.protocol.turnOrder];
  if (team.protocol.permutePerEpisode)
    new RandomGenerator(`${seed}/order/${episodeIndex}`).shuffle(order);
  return order;
}

/** Tokens a turn generated: its own, or what a remote server reported. */
export function generatedTokenCount(turn: Completion): number {
  return turn.generatedTokenCount ?? turn.tokens.length;
}

/**
 * Plays prompts × G episodes with the current team, turn by turn: all episodes whose speaker
 * (and token bound) is the same are completed in one batched call.
 */
export async function playEpisodes(options: EpisodeOptions): Promise<PlayedEpisodes> {
  const { team, groupSize, seed } = options;
  const fromTurn = options.reuse?.fromTurn ?? 0;
  const episodes: Episode[] = [];
  options.prompts.forEach((_prompt, problemIndex) => {
    for (let sampleIndex = 0; sampleIndex < groupSize; sampleIndex++) {
      const index = problemIndex * groupSize + sampleIndex;
      const previous = options.reuse?.previous[index];
      episodes.push({
        problemIndex,
        sampleIndex,
        speakingOrder: previous ? [...previous.speakingOrder] : speakingOrder(team, seed, index),
        turns: previous ? previous.turns.slice(0, fromTurn) : [],
      });
    }
  });
  let generatedTokens = 0;
  for (let turnIndex = fromTurn; turnIndex < team.protocol.turnOrder.length; turnIndex++) {
    options.signal?.throwIfAborted();
    generatedTokens += await playTurn(options, episodes, turnIndex);
  }
  return { episodes, generatedTokens };
}

/** Who speaks turn `turnIndex` of each episode still playing, and how many tokens it may take. */
function speakers(options: EpisodeOptions, episodes: readonly Episode[], turnIndex: number) {
  const groups = new Map<string, { agentIndex: number; limit: number; indices: number[] }>();
  episodes.forEach((episode, index) => {
    if (episode.turns.length < turnIndex) return; // ended early by maxEpisodeTokens
    const agentIndex = episode.speakingOrder[turnIndex]!;
    const spent = episode.turns.reduce((total, turn) => total + generatedTokenCount(turn), 0);
    const limit = Math.min(
      turnTokenLimit(options.team, agentIndex),
      (options.maxEpisodeTokens ?? Infinity) - spent,
    );
    if (limit <= 0) return;
    const key = `${agentIndex}/${limit}`;
    if (!groups.has(key)) groups.set(key, { agentIndex, limit, indices: [] });
    groups.get(key)!.indices.push(index);
  });
  return [...groups.values()];
}

async function playTurn(
  options: EpisodeOptions,
  episodes: Episode[],
  turnIndex: number,
): Promise<number> {
  const { team, prompts, seed, onToken } = options;
  let generated = 0;
  for (const { agentIndex, limit, indices } of speakers(options, episodes, turnIndex)) {
    const agent = team.agents[agentIndex]!;
    const requests: CompletionRequest[] = indices.map((index) => {
      const episode = episodes[index]!;
      return {
        ...renderForAgent(team, agentIndex, prompts[episode.problemIndex]!, episode.turns),
        random: new RandomGenerator(`${seed}/sample/${index}/${turnIndex}`),
      };
    });
    const completions = await agent.policy.complete(requests, {
      maxNewTokens: limit,
      temperature: options.temperature ?? 1,
      ...(agent.stop ? { stop: agent.stop } : {}),
      ...(options.keepHiddenStatesOf?.includes(agentIndex) ? { keepHiddenStates: true } : {}),
      ...(onToken
        ? {
            onToken: (requestIndex: number, token: number, logProb: number) =>
              onToken({
                episodeIndex: indices[requestIndex]!,
                turnIndex,
                agentIndex,
                token,
                logProb,
              }),
          }
        : {}),
    });
    completions.forEach((completion, position) => {
      const record: TurnRecord = { turnIndex, agentIndex, ...completion };
      episodes[indices[position]!]!.turns.push(record);
      generated += generatedTokenCount(completion);
    });
  }
  return generated;
}
