import { meanWithStandardError, normalQuantile } from '../rl/index.js';
import type { Problem, Task } from '../tasks/index.js';
import { rollout } from '../team/rollout.js';
import type { Team } from '../team/team.js';
import type { TeamBatch } from '../team/types.js';

/** Held-out team accuracy and per-agent turn accuracy (what `teamtr eval` reports). */
export interface EvaluationFigures {
  accuracy: number;
  /** Wilson 95% interval. */
  interval: [number, number];
  count: number;
  meanReward: number;
  /** Per-agent turn accuracy where the task can judge a single turn. */
  agents: Array<{
    agent: string;
    turnAccuracy: number | null;
    interval: [number, number] | null;
    count: number;
  }>;
}

export interface Evaluation extends EvaluationFigures {
  batch: TeamBatch;
}

/** Wilson score interval for a binomial proportion. */
export function wilsonInterval(
  successes: number,
  count: number,
  confidence = 0.95,
): [number, number] {
  if (count === 0) return [0, 1];
  const z = normalQuantile(0.5 + confidence / 2);
  const p = successes / count;
  const denominator = 1 + (z * z) / count;
  const center = (p + (z * z) / (2 * count)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / count + (z * z) / (4 * count * count))) / denominator;
  return [Math.max(0, center - half), Math.min(1, center + half)];
}

/**
 * Team accuracy on held-out problems (one episode each, sampled at evaluation.temperature: 1 by default, 0 is greedy), with a Wilson
 * interval, and each agent's turn accuracy where the task can judge a single turn: the turn
 * equals what an ideal agent in that role would write given the turns actually before it.
 */
export async function evaluateTeam(options: {
  team: Team;
  task: Task;
  problems: Problem[];
  temperature: number;
  seed: string;
}): Promise<Evaluation> {
  const { team, task, problems } = options;
  const batch = await rollout({
    team,
    task,
    problems,
    groupSize: 1,
    seed: options.seed,
    temperature: options.temperature || 1e-9,
  });
  const correct = batch.trajectories.filter((trajectory) => trajectory.correct).length;
  const rewards = meanWithStandardError(batch.trajectories.map((trajectory) => trajectory.reward));
  const demonstrator = task.demonstrator;
  const agents = team.agents.map((agent, agentIndex) => {
    const judgeable = demonstrator && agentIndex < task.protocol.roles.length;
    if (!judgeable) return { agent: agent.name, turnAccuracy: null, interval: null, count: 0 };
    let hits = 0;
    let count = 0;
    for (const trajectory of batch.trajectories) {
      const problem = problems[trajectory.problemIndex]!;
      trajectory.turns.forEach((turn, position) => {
        if (turn.agentIndex !== agentIndex) return;
        const previousTurns = trajectory.turns.slice(0, position).map((earlier) => earlier.text);
        const ideal = demonstrator.demonstrate(problem, { role: agentIndex, previousTurns });
        count++;
        if (ideal === turn.text) hits++;
      });
    }
    return {
      agent: agent.name,
      turnAccuracy: count ? hits / count : null,
      interval: count ? wilsonInterval(hits, count) : null,
      count,
    };
  });
  return {
    accuracy: problems.length ? correct / problems.length : 0,
    interval: wilsonInterval(correct, problems.length),
    count: problems.length,
    meanReward: rewards.mean,
    agents,
    batch,
  };
}
