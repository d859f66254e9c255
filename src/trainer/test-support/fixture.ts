import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { saveCheckpoint } from '../../io/checkpoint.js';
import { rollout } from '../../team/rollout.js';
import { tinyTask, tinyTeam } from '../../team/test-support/tiny-team.js';
import type { TrainConfigInput } from '../config/train-config.js';
import type { MetricsRecord } from '../records.js';

/**
 * A temp directory holding three tiny random agents (teamtr checkpoints) and a JSONL task
 * whose answer is a final text these agents produce about a third of the time, so rewards vary
 * and advantages are non-zero.
 */
export async function createTrainingFixture(
  agents = 3,
): Promise<{ directory: string; config: TrainConfigInput }> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-train-'));
  const team = tinyTeam({ agents, seed: 11, initStd: 6 });
  const answer = await commonAnswer(team);
  for (const [index, agent] of team.agents.entries()) {
    await saveCheckpoint(path.join(directory, `agent${index}`), {
      config: agent.policy.model!.config,
      parameters: agent.policy.model!.stateDict(),
      tokenizer: agent.policy.tokenizer.toJSON(),
    });
    agent.policy.model!.destroy();
  }
  const lines = Array.from({ length: 40 }, (_unused, index) =>
    JSON.stringify({ id: `p${index}`, prompt: 'ab', answer, split: index < 30 ? 'train' : 'eval' }),
  );
  const dataset = path.join(directory, 'tiny.jsonl');
  writeFileSync(dataset, `${lines.join('\n')}\n`);
  const config: TrainConfigInput = {
    seed: 1,
    task: {
      name: 'jsonl',
      path: dataset,
      verifier: 'exact',
      roles: Array.from({ length: agents }, (_unused, index) => ({
        name: `r${index}`,
        prompt: '',
      })),
      maxTurnChars: 2,
    },
    agents: team.agents.map((_agent, index) => ({
      name: `agent${index}`,
      model: path.join(directory, `agent${index}`),
      rolePrompt: '',
    })),
    protocol: { maxTurnTokens: 2 },
    rollout: { problemsPerBatch: 4, groupSize: 6 },
    trustRegion: { delta: 0.05, epochs: 2, minibatches: 2 },
    // The fixture's sharp random policies move fast: 1e-4 makes steps that sometimes leave δ.
    optimizer: { learningRate: 1e-4 },
    budget: { generatedTokens: 100_000, maxStages: 4 },
    evaluation: { problems: 10, every: 2 },
    checkpointEvery: 2,
  };
  return { directory, config };
}

/** The final text the untrained team produces closest to a third of the time. */
async function commonAnswer(team: ReturnType<typeof tinyTeam>): Promise<string> {
  const task = tinyTask(team.agents.length);
  const batch = await rollout({
    team,
    task,
    problems: [{ id: 'probe', prompt: 'ab', answer: '' }],
    groupSize: 300,
    seed: 'probe',
  });
  const counts = new Map<string, number>();
  for (const trajectory of batch.trajectories)
    counts.set(trajectory.answerText, (counts.get(trajectory.answerText) ?? 0) + 1);
  const ranked = [...counts.entries()]
    .filter(([text]) => text.trim() !== '')
    .sort((a, b) => Math.abs(a[1] / 300 - 1 / 3) - Math.abs(b[1] / 300 - 1 / 3));
  return ranked[0]![0];
}

/** Every record of a run's metrics.jsonl, in order. */
export function records(runDirectory: string): MetricsRecord[] {
  return readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as MetricsRecord);
}
