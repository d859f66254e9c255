import { generatedTokenCount, playEpisodes, type DrawnToken } from '../team/episodes.js';
import { TurnDecoder } from '../team/policy.js';
import type { Team } from '../team/team.js';
import { TurnTextStream, type StreamedToken } from '../team/turn-stream.js';
import type { Episode, TurnRecord } from '../team/types.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { requestSeed, type ServedModel } from './endpoints.js';
import { tokenText, type DeltaListener, type TokenLogprob } from './generation.js';
import { RequestError, type NormalizedRequest } from './protocol.js';
import type { ServedResult } from './wire.js';

/**
 * The whole team under one model id, played by the trainer's own path (team/episodes.ts): each
 * agent with its limits, stop strings and prompt format, so the served team is the trained
 * team. A request with seed s samples what the trainer's rollout with seed "s" samples for one
 * problem and a group of n: choice i is episode i, token for token.
 *
 * OpenAI semantics: `max_tokens` bounds the tokens of all turns together; `finish_reason` is
 * "length" when any turn, or the whole, was cut at a limit; the temperature defaults to the
 * run's (1 unless it says otherwise, as OpenAI's). The reply is the answer turn; every turn is
 * reported under `teamtr.turns` on its choice.
 */

export interface TeamEndpointOptions {
  /** Temperature when a request sets none: the run's rollout.temperature. @default 1 */
  temperature?: number;
}

/**
 * The team's problem: the user message, after any system (or developer) messages joined to it
 * as the start of the shared context. One problem per request: an assistant message or a second
 * user message (a conversation) is refused, as the team never read one in training.
 */
export function teamPrompt(request: NormalizedRequest): string {
  if (request.kind === 'completion') {
    if (request.prompt.length === 0)
      throw new RequestError(400, 'the team needs a prompt with the problem', 'prompt');
    return request.prompt;
  }
  const users = request.messages.filter((message) => message.role === 'user');
  const others = request.messages.filter(
    (message) => !['user', 'system', 'developer'].includes(message.role),
  );
  if (users.length !== 1 || others.length > 0 || users[0]!.content.length === 0)
    throw new RequestError(
      400,
      `the team answers one problem: send one non-empty user message, after any system messages (got ${request.messages.map((message) => message.role).join(', ')}); a system message starts the shared context, before the problem`,
      'messages',
    );
  return request.messages.map((message) => message.content).join('\n');
}

/** Sampling settings the team was not trained with are refused, not ignored. */
function refuseUnservable(request: NormalizedRequest): void {
  const refusals: Array<[string, boolean]> = [
    ['top_p', request.topP !== null && request.topP < 1],
    ['top_k', request.topK !== null && request.topK > 0],
    ['stop', request.stop.length > 0],
    ['top_logprobs', request.topLogprobs > 0],
  ];
  for (const [param, set] of refusals)
    if (set)
      throw new RequestError(
        400,
        `${param}: the team plays as it was trained (each agent's own limits and stop strings, temperature only) and reports each answer token's log-prob without alternatives; leave ${param} out, or ask an agent's own endpoint`,
        param,
      );
}

function tokenLogprobs(tokenizer: Tokenizer, tokens: readonly StreamedToken[]): TokenLogprob[] {
  return tokens.map(({ token, logProb }) => ({
    ...tokenText(tokenizer, token),
    logprob: logProb,
    top: [],
  }));
}

/** Streams episode 0's answer turn as its agent draws it. */
function answerStream(team: Team, request: NormalizedRequest, onDelta: DeltaListener) {
  let text: TurnTextStream | null = null;
  const open = (agentIndex: number) => {
    const agent = team.agents[agentIndex]!;
    const tokenizer = agent.policy.tokenizer;
    text ??= new TurnTextStream(new TurnDecoder(tokenizer), agent.stop ?? [], (piece, tokens) =>
      onDelta(piece, request.logprobs ? tokenLogprobs(tokenizer, tokens) : []),
    );
    return text;
  };
  return {
    onToken: (drawn: DrawnToken) => {
      if (drawn.episodeIndex === 0 && drawn.turnIndex === team.protocol.answerTurn)
        open(drawn.agentIndex).push(drawn);
    },
    /** The answer turn as played; a policy that reported no tokens (remote) arrives whole. */
    finish(turn: TurnRecord | undefined) {
      if (!turn) return;
      if (!text)
        turn.tokens.forEach((token, index) =>
          open(turn.agentIndex).push({ token, logProb: turn.logProbs[index] ?? 0 }),
        );
      open(turn.agentIndex).finish(turn.text);
    },
  };
}

function resultOf(team: Team, episode: Episode, request: NormalizedRequest): ServedResult {
  const answer = episode.turns[team.protocol.answerTurn];
  const cut =
    episode.turns.length < team.protocol.turnOrder.length ||
    episode.turns.some((turn) => turn.finishReason === 'length');
  return {
    text: answer?.text ?? '',
    finishReason: cut ? 'length' : 'stop',
    promptTokens: episode.turns.reduce((total, turn) => total + turn.inputIds.length, 0),
    completionTokens: episode.turns.reduce((total, turn) => total + generatedTokenCount(turn), 0),
    logprobs:
      request.logprobs && answer
        ? tokenLogprobs(
            team.agents[answer.agentIndex]!.policy.tokenizer,
            answer.tokens.map((token, index) => ({ token, logProb: answer.logProbs[index]! })),
          )
        : null,
    extra: {
      teamtr: {
        turns: episode.turns.map((turn) => ({
          agent: team.agents[turn.agentIndex]!.name,
          text: turn.text,
          finish_reason: turn.finishReason,
          token_ids: turn.tokens,
        })),
      },
    },
  };
}

export function teamEndpoint(
  id: string,
  team: Team,
  options: TeamEndpointOptions = {},
): ServedModel {
  return {
    id,
    async complete(request, events) {
      const prompt = teamPrompt(request);
      refuseUnservable(request);
      const stream = request.stream ? answerStream(team, request, events.onDelta) : null;
      const played = await playEpisodes({
        team,
        prompts: [prompt],
        groupSize: request.n,
        seed: String(requestSeed(request)),
        temperature: request.temperature ?? options.temperature ?? 1,
        ...(request.maxTokens !== null ? { maxEpisodeTokens: request.maxTokens } : {}),
        ...(stream ? { onToken: stream.onToken } : {}),
        signal: events.signal,
      });
      stream?.finish(played.episodes[0]!.turns[team.protocol.answerTurn]);
      return played.episodes.map((episode) => resultOf(team, episode, request));
    },
  };
}
