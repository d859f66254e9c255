import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { chatPromptIds } from '../models/chat.js';
import { loadModel } from '../models/load.js';
import { writeHuggingFaceFixture } from '../models/test-support/huggingface-fixture.js';
import { loadJsonlTask } from '../tasks/jsonl.js';
import { chatMessages } from '../team/chat-view.js';
import { LocalPolicy } from '../team/policy.js';
import { rollout } from '../team/rollout.js';
import type { Team } from '../team/team.js';
import { train } from './trainer.js';

/** The fixture's Qwen2 with room for a few chat turns (RoPE: no position weights to add). */
const longContext = {
  modelType: 'qwen2' as const,
  editConfig: (config: Record<string, unknown>) => ({ ...config, max_position_embeddings: 256 }),
};
const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-chat-team-'));
after(() => rmSync(directory, { recursive: true, force: true }));

/** A GSM8K-format file: question, and an answer whose final number follows "####". */
function gsm8kFile(): string {
  const file = path.join(directory, 'gsm8k.jsonl');
  const lines = Array.from({ length: 12 }, (_unused, index) =>
    JSON.stringify({
      question: `Sam has ${index} apples and gets 2 more.\nHow many now?`,
      answer: `${index} + 2 = ${index + 2}\n#### ${index + 2}`,
      ...(index >= 9 ? { split: 'eval' } : { split: 'train' }),
    }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('a team of instruct models (tiny random Qwen2 checkpoints with a ChatML template)', () => {
  const roles = [
    { name: 'solver', prompt: 'Solve the problem step by step.' },
    { name: 'finalizer', prompt: 'Write the final answer after ####.' },
  ];

  test("each agent reads its chat template's rendering of the shared context; turns end at <|im_end|> or <|endoftext|>", async () => {
    writeHuggingFaceFixture(path.join(directory, 'qwen'), longContext);
    const loaded = [
      await loadModel(path.join(directory, 'qwen')),
      await loadModel(path.join(directory, 'qwen')),
    ];
    const team: Team = {
      agents: loaded.map((model, index) => ({
        name: roles[index]!.name,
        rolePrompt: roles[index]!.prompt,
        speakerTag: `${'AB'[index]}:`,
        policy: new LocalPolicy(model.model, model.tokenizer),
      })),
      protocol: { turnOrder: [0, 1], answerTurn: 1, permutePerEpisode: false, maxTurnTokens: 12 },
    };
    const task = await loadJsonlTask(gsm8kFile(), { verifier: 'math', roles, maxTurnChars: 40 });
    const problems = task.split('train', { seed: 0, count: 3 });
    const batch = await rollout({ team, task, problems, groupSize: 4, seed: 'chat' });
    const tokenizer = loaded[0]!.tokenizer;
    const endOfTurn = [tokenizer.tokenToId('<|im_end|>')!, tokenizer.tokenToId('<|endoftext|>')!];
    let stopped = 0;
    for (const trajectory of batch.trajectories) {
      const [first, second] = trajectory.turns;
      const prompt = problems[trajectory.problemIndex]!.prompt;
      assert.match(prompt, /\n/, 'the GSM8K question keeps its lines');
      assert.deepEqual(
        first!.inputIds,
        chatPromptIds(tokenizer, chatMessages({ rolePrompt: roles[0]!.prompt, prompt, turns: [] })),
      );
      assert.deepEqual(
        second!.inputIds,
        chatPromptIds(
          tokenizer,
          chatMessages({
            rolePrompt: roles[1]!.prompt,
            prompt,
            turns: [{ speaker: 'solver', text: first!.text, own: false }],
          }),
        ),
      );
      for (const turn of trajectory.turns) {
        if (turn.finishReason === 'stop') {
          stopped++;
          assert.ok(
            endOfTurn.includes(turn.tokens.at(-1)!),
            'a turn ends at its end-of-turn token',
          );
          assert.ok(turn.tokens.slice(0, -1).every((token) => !endOfTurn.includes(token)));
        } else assert.equal(turn.tokens.length, 12);
      }
    }
    assert.ok(stopped > 0, 'some turns ended at an end-of-turn token (the fixture samples them)');
    loaded.forEach((model) => model.model.destroy());
  });

  test('trains the team on the GSM8K file with TeamTR', async () => {
    writeHuggingFaceFixture(path.join(directory, 'solver'), longContext);
    writeHuggingFaceFixture(path.join(directory, 'finalizer'), longContext);
    const summary = await train({
      config: {
        task: { name: 'jsonl', path: gsm8kFile(), verifier: 'math', roles, maxTurnChars: 40 },
        agents: [
          { name: 'solver', model: path.join(directory, 'solver') },
          { name: 'finalizer', model: path.join(directory, 'finalizer') },
        ],
        protocol: { maxTurnTokens: 10 },
        rollout: { problemsPerBatch: 2, groupSize: 4 },
        budget: { generatedTokens: 1_000_000, maxStages: 2 },
        evaluation: { problems: 3, every: 2 },
      },
      runDirectory: path.join(directory, 'run'),
    });
    assert.equal(summary.stages, 2);
    assert.equal(summary.updates, 4);
    assert.equal(summary.certificates.outOfRegionRate, 0);
  });
});
