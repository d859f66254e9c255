import { grpoAdvantages } from '../../rl/index.js';
import { rollout } from '../../team/rollout.js';
import { tinyTask, tinyTeam } from '../../team/test-support/tiny-team.js';

/**
 * A one-agent tiny team (sharp random policy), a batch it sampled whose rewards vary (a longer
 * answer is rewarded), and the batch's GRPO advantages: what the update tests train on.
 */
export async function oneAgentBatch() {
  const team = tinyTeam({ agents: 1, seed: 5, initStd: 6 });
  const task = tinyTask(1);
  const batch = await rollout({
    team,
    task,
    problems: task.split('train', { seed: 0, count: 4 }),
    groupSize: 8,
    seed: 'ppo',
  });
  batch.trajectories.forEach(
    (trajectory) => (trajectory.reward = trajectory.answerText.length > 1 ? 1 : 0),
  );
  const advantages = grpoAdvantages({
    rewards: batch.trajectories.map((trajectory) => trajectory.reward),
    groupIds: batch.trajectories.map((trajectory) => trajectory.problemIndex),
  }).advantages;
  return { team, model: team.agents[0]!.policy.model!, batch, advantages };
}
