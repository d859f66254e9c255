import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { completionLogDistributions, scoreToArrays } from '../../nn/score.js';
import { TransformerLM } from '../../nn/transformer.js';
import { tokenKl } from '../../rl/index.js';
import { LocalPolicy } from '../../team/policy.js';
import { renderAgentInput } from '../../team/render.js';
import { rollout } from '../../team/rollout.js';
import type { Agent, Team } from '../../team/team.js';
import { tinyTask, tinyTeam } from '../../team/test-support/tiny-team.js';
import { CharTokenizer } from '../../tokenizer/char.js';
import { ConfigError } from '../../util/errors.js';
import { RandomGenerator } from '../../util/random.js';
import {
  alignmentExamples,
  alignNewcomer,
  klLossAndGradient,
  resolveAlignmentMode,
  sharesVocabulary,
  type AlignmentExample,
} from './alignment.js';
import { alignmentConfigSchema } from '../config/train-config.js';
import { fixtureAlphabet } from '../test-support/swap-models.js';

const task = tinyTask(3);

function newcomerWith(
  alphabet: string,
  options: { seed: string; hiddenSize?: number; rolePrompt?: string },
): Agent {
  const tokenizer = new CharTokenizer({ alphabet });
  const model = new TransformerLM(
    {
      architecture: 'llama',
      vocabSize: tokenizer.vocabSize,
      hiddenSize: options.hiddenSize ?? 16,
      layers: 1,
      heads: 2,
      intermediateSize: 32,
      maxPositions: 64,
      tieEmbeddings: true,
    },
    new RandomGenerator(options.seed),
  );
  for (const { tensor } of model.namedParameters())
    tensor.data.forEach((value, position) => (tensor.data[position] = value * 4));
  return {
    name: 'agent2',
    rolePrompt: options.rolePrompt ?? '',
    speakerTag: 'C:',
    policy: new LocalPolicy(model, tokenizer),
  };
}

async function heldOutExamples(team: Team, newcomer: Agent): Promise<AlignmentExample[]> {
  const batch = await rollout({
    team,
    task,
    problems: task.split('eval', { seed: 9, count: 6 }),
    groupSize: 8,
    seed: 'held-out',
  });
  return alignmentExamples(batch, team, 2, newcomer);
}

/** Mean cross-entropy of the newcomer on the outgoing agent's turn texts (no gradients). */
function supervisedCrossEntropy(newcomer: Agent, examples: readonly AlignmentExample[]): number {
  const scores = scoreToArrays(
    newcomer.policy.model!,
    examples.map((example) => ({
      context: example.supervised.input,
      completion: example.supervised.target,
    })),
  );
  const values = scores.flatMap((score) => Array.from(score.logProbs, (logProb) => -logProb));
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Mean exact KL(outgoing ‖ newcomer) over the outgoing agent's tokens, via src/rl. */
function meanKl(
  teacher: TransformerLM,
  student: TransformerLM,
  examples: readonly AlignmentExample[],
): number {
  const teacherLogs = completionLogDistributions(
    teacher,
    examples.map((example) => example.teacher),
  );
  const studentLogs = completionLogDistributions(
    student,
    examples.map((example) => example.student),
  );
  const positions = teacherLogs.length / student.config.vocabSize;
  const perToken = tokenKl({
    oldLogProbsFull: teacherLogs,
    newLogProbsFull: studentLogs,
    positions,
    vocab: student.config.vocabSize,
  });
  return perToken.reduce((a, b) => a + b, 0) / positions;
}

const settings = (overrides: Record<string, unknown>) => ({
  ...alignmentConfigSchema.parse(overrides),
  problemsPerBatch: 4,
  groupSize: 8,
});

describe('stage-0 alignment', () => {
  test("examples align on text: the newcomer's own rendering and tokenizer, the outgoing turn's text as target", async () => {
    const team = tinyTeam({ seed: 5, initStd: 6 });
    const newcomer = newcomerWith('C:BA\nbaz', { seed: 'n', rolePrompt: 'z' });
    const batch = await rollout({
      team,
      task,
      problems: task.split('train', { seed: 1, count: 3 }),
      groupSize: 4,
      seed: 'x',
    });
    const examples = alignmentExamples(batch, team, 2, newcomer);
    // A turn whose content is only special tokens and that never stopped has no text to fit.
    const targetText = (turn: { finishReason: string; text: string }) =>
      turn.finishReason === 'stop' ? `${turn.text}\n` : turn.text;
    const fitted = batch.trajectories.filter(
      (trajectory) => targetText(trajectory.turns[2]!) !== '',
    );
    assert.ok(fitted.length >= 6, 'too few turns with text for the test to mean anything');
    assert.equal(examples.length, fitted.length);
    const tokenizer = newcomer.policy.tokenizer;
    let cursor = 0;
    for (const trajectory of fitted) {
      const turn = trajectory.turns[2]!;
      const example = examples[cursor++]!;
      const expectedInput = renderAgentInput(
        newcomer,
        batch.problems[trajectory.problemIndex]!.prompt,
        trajectory.turns.slice(0, 2).map((earlier) => ({
          speakerTag: team.agents[earlier.agentIndex]!.speakerTag,
          text: earlier.text,
        })),
      );
      assert.equal(
        tokenizer.decode(example.supervised.input, { skipSpecialTokens: true }),
        expectedInput,
      );
      assert.equal(tokenizer.decode(example.supervised.target), targetText(turn));
      assert.deepEqual(example.teacher, { context: turn.inputIds, completion: turn.tokens });
    }
    // The two tokenizers give the same text different ids: the alignment really is text-level.
    const some = examples.find((example) => example.supervised.target.length > 1)!;
    assert.notDeepEqual(
      some.supervised.target,
      team.agents[2]!.policy.tokenizer.encode(tokenizer.decode(some.supervised.target)),
    );
    assert.equal(
      sharesVocabulary(team.agents[2]!.policy as LocalPolicy, newcomer.policy as LocalPolicy),
      false,
    );
  });

  test("sft across tokenizers lowers the newcomer's held-out loss on the outgoing agent's turns, leaving the team untouched", async () => {
    const team = tinyTeam({ seed: 5, initStd: 6 });
    const teamWeights = team.agents.map((agent) =>
      agent.policy.model!.stateDict().map((entry) => Array.from(entry.data)),
    );
    const newcomer = newcomerWith('C:BA\nbaz', { seed: 'n' });
    const heldOut = await heldOutExamples(team, newcomer);
    const before = supervisedCrossEntropy(newcomer, heldOut);
    const result = await alignNewcomer({
      team,
      task,
      agentIndex: 2,
      newcomer,
      settings: settings({ steps: 24, learningRate: 3e-3 }),
      temperature: 1,
      beta1: 0.9,
      beta2: 0.99,
      seed: 'align',
    });
    const after = supervisedCrossEntropy(newcomer, heldOut);
    assert.equal(result.steps, 24);
    assert.equal(result.mode, 'sft');
    assert.ok(result.generatedTokens > 0);
    assert.ok(
      after < 0.7 * before,
      `held-out cross-entropy ${before.toFixed(3)} → ${after.toFixed(3)}`,
    );
    team.agents.forEach((agent, index) =>
      assert.deepEqual(
        agent.policy.model!.stateDict().map((entry) => Array.from(entry.data)),
        teamWeights[index],
      ),
    );
  });

  test('kl with the same tokenizer lowers the held-out KL to the outgoing agent; sft+kl across tokenizers falls back to sft', async () => {
    const team = tinyTeam({ seed: 5, initStd: 6 });
    const teacher = team.agents[2]!.policy.model!;
    const wide = newcomerWith(fixtureAlphabet, { seed: 'w', hiddenSize: 24 });
    const heldOut = await heldOutExamples(team, wide);
    const before = meanKl(teacher, wide.policy.model!, heldOut);
    const result = await alignNewcomer({
      team,
      task,
      agentIndex: 2,
      newcomer: wide,
      settings: settings({ steps: 24, mode: 'kl', learningRate: 3e-3 }),
      temperature: 1,
      beta1: 0.9,
      beta2: 0.99,
      seed: 'align',
    });
    const after = meanKl(teacher, wide.policy.model!, heldOut);
    assert.equal(result.mode, 'kl');
    assert.ok(after < 0.5 * before, `held-out KL ${before.toFixed(3)} → ${after.toFixed(3)}`);
    const other = newcomerWith('C:BA\nbaz', { seed: 'n' });
    const fallback = await alignNewcomer({
      team,
      task,
      agentIndex: 2,
      newcomer: other,
      settings: settings({ steps: 2, mode: 'sft+kl' }),
      temperature: 1,
      beta1: 0.9,
      beta2: 0.99,
      seed: 'align',
    });
    assert.equal(fallback.mode, 'sft');
    assert.match(fallback.note ?? '', /fell back to sft/);
  });

  test('the KL loss is the exact token KL and its gradient matches finite differences', async () => {
    const team = tinyTeam({ seed: 5, initStd: 6 });
    const teacher = team.agents[2]!.policy.model!;
    const student = newcomerWith(fixtureAlphabet, { seed: 's' });
    const model = student.policy.model!;
    const examples = (await heldOutExamples(team, student)).slice(0, 12);
    const loss = klLossAndGradient(model, teacher, examples);
    assert.ok(
      Math.abs(loss - meanKl(teacher, model, examples)) < 1e-4 * Math.max(1, loss),
      `${loss} vs ${meanKl(teacher, model, examples)}`,
    );
    const parameter = model.trainableParameters().find(({ name }) => name.includes('down'))!.tensor;
    const gradient = Float32Array.from(parameter.grad!);
    const checked = Array.from(gradient.keys())
      .sort((a, b) => Math.abs(gradient[b]!) - Math.abs(gradient[a]!))
      .slice(0, 3);
    for (const index of checked) {
      const original = parameter.data[index]!;
      const epsilon = 1e-2;
      parameter.data[index] = original + epsilon;
      const plus = meanKl(teacher, model, examples);
      parameter.data[index] = original - epsilon;
      const minus = meanKl(teacher, model, examples);
      parameter.data[index] = original;
      const numeric = (plus - minus) / (2 * epsilon);
      assert.ok(
        Math.abs(numeric - gradient[index]!) <= 0.05 * Math.abs(gradient[index]!) + 1e-3,
        `entry ${index}: analytic ${gradient[index]} vs numeric ${numeric}`,
      );
    }
  });

  test('alignment is deterministic given its seed', async () => {
    const team = tinyTeam({ seed: 5, initStd: 6 });
    const runs = [];
    for (let copy = 0; copy < 2; copy++) {
      const newcomer = newcomerWith('C:BA\nbaz', { seed: 'same' });
      const result = await alignNewcomer({
        team,
        task,
        agentIndex: 2,
        newcomer,
        settings: settings({ steps: 6, mode: 'sft' }),
        temperature: 1,
        beta1: 0.9,
        beta2: 0.99,
        seed: 'det',
      });
      runs.push({
        losses: result.losses,
        weights: newcomer.policy.model!.stateDict().map((entry) => Array.from(entry.data)),
      });
    }
    assert.deepEqual(runs[0], runs[1]);
  });

  test('modes: kl alone across tokenizers is a config error naming the alternatives', () => {
    assert.deepEqual(resolveAlignmentMode('sft', false), { mode: 'sft', note: null });
    assert.deepEqual(resolveAlignmentMode('kl', true), { mode: 'kl', note: null });
    assert.deepEqual(resolveAlignmentMode('sft+kl', true), { mode: 'sft+kl', note: null });
    assert.throws(
      () => resolveAlignmentMode('kl', false, 'swaps[0].alignment.mode'),
      (error: unknown) =>
        error instanceof ConfigError &&
        /swaps\[0\]\.alignment\.mode.*use "sft"/.test(error.message),
    );
  });
});
