import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startServeProcess, type ServeProcess } from '../cli/test-support/serve-process.js';
import { chatPromptIds } from '../models/chat.js';
import { writeHuggingFaceFixture } from '../models/test-support/huggingface-fixture.js';
import { rollout } from '../team/rollout.js';
import { encodeWithBos } from '../tokenizer/encode-with-bos.js';
import { openRun, type OpenedRun } from '../trainer/open-run.js';
import { train } from '../trainer/trainer.js';

/**
 * The served team is the trained team: a team of instruct models (tiny Qwen2 checkpoints with a
 * ChatML template) is trained, served by the real `teamtr serve RUN`, and its answer to a
 * seeded request is compared with the trainer's own rollout of the same prompt and seed, token
 * for token, with each agent's turn limit and stop string in play.
 */
const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-served-team-'));
const runDirectory = path.join(directory, 'run');
const roles = [
  { name: 'solver', prompt: 'Solve the problem step by step.' },
  { name: 'finalizer', prompt: 'Write the final answer after ####.' },
];
/** Each agent's own limits: the solver's turns are short, the finalizer's end at a space. */
const limits = { solverTokens: 5, finalizerTokens: 9, finalizerStop: ' ' };
const prompt = 'Sam has 4 apples and gets 2 more.\nHow many now?';

function gsm8kFile(): string {
  const file = path.join(directory, 'gsm8k.jsonl');
  const lines = Array.from({ length: 12 }, (_unused, index) =>
    JSON.stringify({
      question: `Sam has ${index} apples and gets 2 more.\nHow many now?`,
      answer: `${index} + 2 = ${index + 2}\n#### ${index + 2}`,
      split: index >= 9 ? 'eval' : 'train',
    }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

let server: ServeProcess;
let url: string;
let opened: OpenedRun;

before(async () => {
  const longContext = {
    modelType: 'qwen2' as const,
    editConfig: (config: Record<string, unknown>) => ({ ...config, max_position_embeddings: 256 }),
  };
  writeHuggingFaceFixture(path.join(directory, 'solver'), { ...longContext, seed: 3 });
  writeHuggingFaceFixture(path.join(directory, 'finalizer'), { ...longContext, seed: 4 });
  await train({
    config: {
      task: { name: 'jsonl', path: gsm8kFile(), verifier: 'math', roles, maxTurnChars: 40 },
      agents: [
        {
          name: 'solver',
          model: path.join(directory, 'solver'),
          maxTurnTokens: limits.solverTokens,
        },
        {
          name: 'finalizer',
          model: path.join(directory, 'finalizer'),
          maxTurnTokens: limits.finalizerTokens,
          stop: [limits.finalizerStop],
        },
      ],
      protocol: { maxTurnTokens: 12 },
      rollout: { problemsPerBatch: 2, groupSize: 4, temperature: 0.9 },
      budget: { generatedTokens: 1_000_000, maxStages: 1 },
      evaluation: { problems: 3, every: 1 },
    },
    runDirectory,
  });
  server = await startServeProcess(
    ['serve', runDirectory, '--port', '0'],
    /listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/,
  );
  url = server.match[1]!;
  opened = await openRun(runDirectory);
});
after(async () => {
  if (server) await server.stop();
  rmSync(directory, { recursive: true, force: true });
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function post(body: unknown): Promise<any> {
  const response = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return response.json();
}

describe('the served team is the trained team', () => {
  test("a seeded answer equals the trainer's rollout of the prompt and seed, token for token", async () => {
    const samples = 6;
    const served = await post({
      model: 'team',
      messages: [{ role: 'user', content: prompt }],
      seed: 5,
      n: samples,
    });
    // What the trainer samples: its rollout, at the run's temperature (the request set none).
    const batch = await rollout({
      team: opened.built.team,
      task: opened.task,
      problems: [{ id: 'served', prompt, answer: '6' }],
      groupSize: samples,
      seed: '5',
      temperature: opened.config.rollout.temperature,
    });
    assert.equal(served.choices.length, samples);
    batch.trajectories.forEach((trajectory, index) => {
      const choice = served.choices[index];
      assert.deepEqual(
        choice.teamtr.turns,
        trajectory.turns.map((turn) => ({
          agent: opened.built.team.agents[turn.agentIndex]!.name,
          text: turn.text,
          finish_reason: turn.finishReason,
          token_ids: turn.tokens,
        })),
      );
      assert.equal(choice.message.content, trajectory.answerText);
      const cut = trajectory.turns.some((turn) => turn.finishReason === 'length');
      assert.equal(choice.finish_reason, cut ? 'length' : 'stop');
    });
    // Each agent's own limits shaped the answer.
    const turns = batch.trajectories.flatMap((trajectory) => trajectory.turns);
    const solver = turns.filter((turn) => turn.agentIndex === 0);
    const finalizer = turns.filter((turn) => turn.agentIndex === 1);
    assert.ok(solver.every((turn) => turn.tokens.length <= limits.solverTokens));
    assert.ok(solver.some((turn) => turn.tokens.length === limits.solverTokens));
    assert.ok(finalizer.some((turn) => turn.tokens.length > limits.solverTokens));
    assert.ok(finalizer.every((turn) => !turn.text.includes(limits.finalizerStop)));
    const tokenizer = opened.built.team.agents[1]!.policy.tokenizer;
    assert.ok(
      finalizer.some(
        (turn) =>
          turn.finishReason === 'stop' &&
          tokenizer.decode(turn.tokens, { skipSpecialTokens: true }).includes(' '),
      ),
      'some finalizer turn ended at its stop string',
    );
  });

  test("an agent's own endpoint reads its chat template and takes its turn length and stop", async () => {
    const messages = [{ role: 'user', content: prompt }];
    const served = await post({ model: 'finalizer', messages, seed: 1, n: 4 });
    const tokenizer = opened.built.team.agents[1]!.policy.tokenizer;
    const templated = chatPromptIds(tokenizer, messages).length;
    assert.notEqual(templated, encodeWithBos(tokenizer, prompt).length);
    assert.equal(served.usage.prompt_tokens, templated);
    for (const choice of served.choices) assert.ok(!choice.message.content.includes(' '));
    assert.ok(served.usage.completion_tokens <= 4 * limits.finalizerTokens);
  });
});
