import { RandomGenerator } from '../util/random.js';
import type { Problem, Task } from '../tasks/index.js';
import type { CompletionRequest } from './policy.js';
import { renderForAgent } from './render.js';
import { hasSeveralRounds, turnTokenLimit, type Team } from './team.js';
import type { TeamBatch, Trajectory, TurnRecord } from './types.js';

export interface RolloutOptions {
  team: Team;
  task: Task;
  problems: readonly Problem[];
  /** G: trajectories per problem. */
  groupSize: number;
  /**
   * Seed of the batch's random streams. Trajectory j's turn k always draws from the stream
   * (seed, j, k), so two batches with the same seed use common random numbers: an agent
   * whose policy and context did not change samples the same tokens.
   */
  seed: string;
  /** Sampling temperature. @default 1 */
  temperature?: number;
  /**
   * Suffix resampling: reuse `previous`'s turns before `fromTurn` and sample turns
   * fromTurn..end anew. Valid when only agents speaking at or after `fromTurn` changed since
   * `previous` was sampled, the protocol has a single round and the order is fixed: the
   * prefix then has exactly the distribution a full resample would give it.
   */
  reuse?: { previous: TeamBatch; fromTurn: number };
  /**
   * Agents whose turns keep the final hidden states that predicted their tokens
   * (TurnRecord.hiddenStates): an update of one of them reads π_old from them.
   */
  keepHiddenStatesOf?: readonly number[];
}

/** Per-episode speaking order: the protocol's, or a seeded shuffle of it. */
function speakingOrder(team: Team, seed: string, trajectoryIndex: number): number[] {
  const order = [...team.protocol.turnOrder];
  if (team.protocol.permutePerEpisode)
    new RandomGenerator(`${seed}/order/${trajectoryIndex}`).shuffle(order);
  return order;
}

/**
 * Samples B problems × G trajectories with the current team. Turn by turn, all trajectories
 * whose speaker is the same agent are completed in one batched call.
 */
export async function rollout(options: RolloutOptions): Promise<TeamBatch> {
  const { team, task, problems, groupSize, seed } = options;
  const fromTurn = options.reuse?.fromTurn ?? 0;
  if (options.reuse) validateReuse(options);
  const trajectories: Trajectory[] = [];
  problems.forEach((_problem, problemIndex) => {
    for (let sampleIndex = 0; sampleIndex < groupSize; sampleIndex++) {
      const index = problemIndex * groupSize + sampleIndex;
      const previous = options.reuse?.previous.trajectories[index];
      trajectories.push({
        problemIndex,
        sampleIndex,
        speakingOrder: previous ? [...previous.speakingOrder] : speakingOrder(team, seed, index),
        turns: previous ? previous.turns.slice(0, fromTurn) : [],
        answerText: '',
        reward: 0,
        correct: false,
      });
    }
  });
  let generatedTokens = 0;
  const turnCount = team.protocol.turnOrder.length;
  for (let turnIndex = fromTurn; turnIndex < turnCount; turnIndex++) {
    generatedTokens += await sampleTurn(options, trajectories, turnIndex);
  }
  for (const trajectory of trajectories) {
    const problem = problems[trajectory.problemIndex]!;
    trajectory.answerText = trajectory.turns[team.protocol.answerTurn]!.text;
    const verdict = await task.verify(problem, trajectory.answerText);
    trajectory.reward = verdict.reward;
    trajectory.correct = verdict.correct;
  }
  return {
    problems: [...problems],
    groupSize,
    trajectories,
    generatedTokens,
    resampledFromTurn: fromTurn,
  };
}

async function sampleTurn(
  options: RolloutOptions,
  trajectories: Trajectory[],
  turnIndex: number,
): Promise<number> {
  const { team, problems, seed } = options;
  let generated = 0;
  const bySpeaker = new Map<number, number[]>();
  trajectories.forEach((trajectory, index) => {
    const speaker = trajectory.speakingOrder[turnIndex]!;
    if (!bySpeaker.has(speaker)) bySpeaker.set(speaker, []);
    bySpeaker.get(speaker)!.push(index);
  });
  for (const [agentIndex, indices] of bySpeaker) {
    const agent = team.agents[agentIndex]!;
    const requests: CompletionRequest[] = indices.map((index) => {
      const trajectory = trajectories[index]!;
      const prompt = problems[trajectory.problemIndex]!.prompt;
      return {
        ...renderForAgent(team, agentIndex, prompt, trajectory.turns),
        random: new RandomGenerator(`${seed}/sample/${index}/${turnIndex}`),
      };
    });
    const completions = await agent.policy.complete(requests, {
      maxNewTokens: turnTokenLimit(team, agentIndex),
      temperature: options.temperature ?? 1,
      ...(agent.stop ? { stop: agent.stop } : {}),
      ...(options.keepHiddenStatesOf?.includes(agentIndex) ? { keepHiddenStates: true } : {}),
    });
    completions.forEach((completion, position) => {
      const record: TurnRecord = { turnIndex, agentIndex, ...completion };
      trajectories[indices[position]!]!.turns.push(record);
      generated += completion.generatedTokenCount ?? completion.tokens.length;
    });
  }
  return generated;
}

function validateReuse(options: RolloutOptions): void {
  const { previous, fromTurn } = options.reuse!;
  const { protocol } = options.team;
  if (hasSeveralRounds(protocol) || protocol.permutePerEpisode) {
    throw new Error('suffix resampling needs a single-round protocol with a fixed order');
  }
  if (
    previous.trajectories.length !== options.problems.length * options.groupSize ||
    previous.problems.some((problem, index) => problem.id !== options.problems[index]?.id)
  ) {
    throw new Error('suffix resampling must reuse a batch of the same problems and group size');
  }
  if (!(fromTurn >= 0 && fromTurn <= protocol.turnOrder.length))
    throw new Error(`fromTurn ${fromTurn} out of range`);
}
