import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { writeHuggingFaceFixture } from '../../models/test-support/huggingface-fixture.js';
import { TinkerClient } from '../../tinker/client.js';
import { TinkerRequestFailedError, TinkerStatusError } from '../../tinker/errors.js';
import { LocalTinkerEngine } from './local-engine.js';
import { startTinkerService, type RunningTinkerService } from './server.js';
import type { Datum } from '../../tinker/types.js';

/**
 * The whole path on real HTTP: TinkerClient ↔ `teamtr serve --tinker`'s service on 127.0.0.1 ↔
 * the local engine, against the same operations run on a second engine in-process (no HTTP).
 * Equal seeds and equal operations must give bit-identical log-probs both ways.
 */
const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-tinker-'));
const baseDirectory = path.join(root, 'tiny-qwen');
let service: RunningTinkerService;
let client: TinkerClient;

before(async () => {
  writeHuggingFaceFixture(baseDirectory, { modelType: 'qwen2' });
  service = await startTinkerService({
    engine: new LocalTinkerEngine('tiny-qwen', baseDirectory),
    port: 0,
    pollWaitMs: 200,
  });
  client = await TinkerClient.connect({
    baseURL: service.url,
    environment: { TINKER_API_KEY: 'tml-local' },
    retryDelayMs: 1,
  });
});

after(async () => {
  client.close();
  await service.close();
  rmSync(root, { recursive: true, force: true });
});

const prompt = [286, 17, 42, 99];
/** An importance-sampling datum for a sampled completion, rewarded by `advantage`. */
function policyDatum(completion: number[], logProbs: number[], advantage: number): Datum {
  const sequence = [...prompt, ...completion];
  const inputTokens = sequence.slice(0, -1);
  const promptPositions = prompt.length - 1;
  const zeros = (count: number) => new Array<number>(count).fill(0);
  return {
    inputTokens,
    lossInputs: {
      target_tokens: { dtype: 'int64', data: sequence.slice(1), shape: [inputTokens.length] },
      logprobs: {
        dtype: 'float32',
        data: [...zeros(promptPositions), ...logProbs],
        shape: [inputTokens.length],
      },
      advantages: {
        dtype: 'float32',
        data: [...zeros(promptPositions), ...completion.map(() => advantage)],
        shape: [inputTokens.length],
      },
    },
  };
}

describe('teamtr serve --tinker, end to end', () => {
  test('sample → forward_backward → optim_step over HTTP equals the same steps done locally', async () => {
    const lora = { rank: 4, seed: 5 };
    const model = await client.createTrainingModel({ baseModel: 'tiny-qwen', lora });
    const local = new LocalTinkerEngine('tiny-qwen', baseDirectory);
    const localId = await local.createModel('tiny-qwen', lora);
    const parameters = { maxTokens: 6, seed: 3, temperature: 1 };

    const before = await model.saveWeights('before');
    const sampler = await client.createSampler({
      modelPath: await model.saveWeightsForSampler('first'),
    });
    const sampled = await sampler.sample({ prompt, parameters, numSamples: 2 });
    const localSampled = await local.sample(
      { modelPath: local.saveWeights(localId, 'first', 'sampler_weights') },
      { prompt, parameters, numSamples: 2 },
    );
    assert.deepEqual(sampled.sequences, localSampled.sequences);
    assert.equal(sampled.sequences[0]!.logProbs!.length, sampled.sequences[0]!.tokens.length);

    // The sampler's log-probs are the trainer's: forward on the sampled tokens gives them back.
    const data = sampled.sequences.map((sequence, index) =>
      policyDatum(sequence.tokens, sequence.logProbs!, index === 0 ? 1 : -1),
    );
    const forward = await model.forward(data, 'importance_sampling');
    forward.lossOutputs.forEach((outputs, index) => {
      const completion = outputs.logprobs!.data.slice(prompt.length - 1);
      sampled.sequences[index]!.logProbs!.forEach((value, position) =>
        assert.ok(
          Math.abs(value - completion[position]!) < 1e-5,
          `${value} vs ${completion[position]}`,
        ),
      );
    });

    const remote = await model.forwardBackward(data, 'importance_sampling');
    const localResult = local.forwardBackward(localId, data, 'importance_sampling', false);
    assert.deepEqual(remote, localResult);
    const adam = { learningRate: 0.01 };
    await model.optimStep(adam);
    local.optimStep(localId, {
      ...{ beta1: 0.9, beta2: 0.95, epsilon: 1e-12, weightDecay: 0, gradientClipNorm: 0 },
      ...adam,
    });

    const after = await model.forward(data, 'importance_sampling');
    const localAfter = local.forwardBackward(localId, data, 'importance_sampling', true);
    assert.deepEqual(after, localAfter);
    assert.notDeepEqual(after.lossOutputs, forward.lossOutputs, 'the step changed the adapter');
    // The step lowered the importance-sampling loss it was taken on.
    assert.ok(
      after.metrics['loss:sum']! < forward.metrics['loss:sum']!,
      `loss ${forward.metrics['loss:sum']} → ${after.metrics['loss:sum']}`,
    );

    // Undo: reloading the saved weights restores the log-probs exactly.
    await model.loadWeights(before, { optimizer: true });
    assert.deepEqual(await model.forward(data, 'importance_sampling'), forward);
  });

  test('a custom loss trains through forward + weighted cross-entropy', async () => {
    const model = await client.createTrainingModel({
      baseModel: 'tiny-qwen',
      lora: { rank: 2, seed: 1 },
    });
    const datum = policyDatum([5, 6, 7], [-1, -1, -1], 1);
    // Maximize the sequence's log-prob: loss = −Σ ℓ, gradient −1 per token.
    const result = await model.forwardBackwardCustom([datum], (logProbs) => ({
      loss: -logProbs[0]!.reduce((total, value) => total + value, 0),
      gradients: [logProbs[0]!.map(() => -1)],
    }));
    assert.ok(Number.isFinite(result.metrics['custom_loss:sum']));
    const beforeStep = await model.forward([datum], 'cross_entropy');
    await model.optimStep({ learningRate: 0.05 });
    const afterStep = await model.forward([datum], 'cross_entropy');
    assert.ok(afterStep.metrics['loss:sum']! < beforeStep.metrics['loss:sum']!);
  });

  test('bad requests fail with errors that name the route and what to do', async () => {
    await assert.rejects(
      client.createTrainingModel({ baseModel: 'qwen-72b', lora: { rank: 2 } }),
      (error: Error) =>
        error instanceof TinkerRequestFailedError &&
        /unknown base_model "qwen-72b"; this server serves "tiny-qwen"/.test(error.message),
    );
    const model = await client.createTrainingModel({ baseModel: 'tiny-qwen', lora: { rank: 2 } });
    await assert.rejects(
      model.forwardBackward([policyDatum([5], [-1], 1)], 'dro'),
      /loss_fn "dro" is not implemented by the local engine \(available: cross_entropy, importance_sampling/,
    );
    await assert.rejects(
      model.loadWeights('tinker://nowhere/weights/x', { optimizer: false }),
      /no saved weights at "tinker:\/\/nowhere\/weights\/x"/,
    );
    const response = await fetch(`${service.url}/v1/chat/completions`, {
      method: 'POST',
      body: '{}',
    });
    assert.equal(response.status, 404);
    assert.match(
      ((await response.json()) as { detail: string }).detail,
      /no route POST \/v1\/chat\/completions; `teamtr serve --tinker` implements: .*POST \/api\/v1\/forward_backward/,
    );
    await assert.rejects(
      client.createSampler({ modelPath: 'tinker://x/sampler_weights/none' }),
      (error: Error) => error instanceof TinkerStatusError && error.status === 400,
    );
  });
});
