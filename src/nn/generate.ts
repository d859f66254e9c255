import { ShapeError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import { noGrad, tidy } from '../tensor/index.js';
import { KeyValueCache } from './kv-cache.js';
import { sampleTokens, type SamplingSettings } from './sampling.js';
import type { TransformerLM } from './transformer.js';

export interface GenerateOptions extends Partial<SamplingSettings> {
  /** One prompt (token ids, non-empty) per sequence. */
  prompts: readonly (readonly number[])[];
  maxNewTokens: number;
  /**
   * One generator for the whole batch, or one per row: per-row streams give common random
   * numbers (a row's draws do not depend on the other rows), which pairs batches sampled
   * from slightly different policies.
   */
  random: RandomGenerator | readonly RandomGenerator[];
  /** A row stops after emitting any of these (the stop token is kept in its output). */
  stopTokens?: readonly number[];
  /** Token used for left padding; never attended to. @default 0 */
  padId?: number;
  /**
   * Sample only ids below this: a model may have more embedding rows than its tokenizer has
   * tokens (Qwen pads to a multiple of 128). Log-probs stay normalized over every row, as in
   * scoring. @default the model's vocabSize
   */
  vocabularyLimit?: number;
  /**
   * Prompt positions (rows × slots) per prefill pass: longer prompts run through the KV cache
   * in chunks, so a pass's activations stay bounded (SmolLM2-135M's MLP alone holds 3 × 1,536
   * floats a position). @default 4096
   */
  prefillChunkPositions?: number;
}

export interface GeneratedSequence {
  tokens: number[];
  /** log π(token | prefix) under the model at temperature 1, recorded while sampling. */
  logProbs: number[];
  finishReason: 'stop' | 'length';
}

interface PaddedPrompts {
  /** [batch·promptLength] left-padded ids and their positions. */
  ids: Int32Array;
  positions: Int32Array;
  keyMask: Float32Array;
  batch: number;
  promptLength: number;
  /** Positions per prefill pass (see GenerateOptions.prefillChunkPositions). */
  chunkPositions: number;
}

/**
 * Runs the prompt slots before the last chunk through the cache (no logits: only the last
 * chunk's final slot yields the first token's) and returns the last chunk's ids and positions
 * for the first sampling step. Short prompts are one pass.
 */
function prefillAllButLastChunk(
  model: TransformerLM,
  cache: KeyValueCache,
  prompts: PaddedPrompts,
): { ids: Int32Array; positions: Int32Array; length: number } {
  const { batch, promptLength, keyMask } = prompts;
  const chunkLength = Math.max(1, Math.floor(prompts.chunkPositions / batch));
  const slice = (start: number, end: number) => {
    const length = end - start;
    const ids = new Int32Array(batch * length);
    const positions = new Int32Array(batch * length);
    for (let row = 0; row < batch; row++) {
      const from = row * promptLength;
      ids.set(prompts.ids.subarray(from + start, from + end), row * length);
      positions.set(prompts.positions.subarray(from + start, from + end), row * length);
    }
    return { ids, positions, length };
  };
  if (promptLength <= chunkLength) {
    return { ids: prompts.ids, positions: prompts.positions, length: promptLength };
  }
  let start = 0;
  for (; promptLength - start > chunkLength; start += chunkLength) {
    const chunk = slice(start, start + chunkLength);
    tidy(() => {
      model.forwardHidden({ ...chunk, batch, keyMask, cache });
    });
  }
  return slice(start, promptLength);
}

/**
 * Batched sampling with a KV cache. Prompts of different lengths are left-padded to a common
 * length; padding slots are masked out of attention and positions count real tokens only,
 * so each row computes exactly what it would alone. Deterministic given the generator.
 */
export function generate(model: TransformerLM, options: GenerateOptions): GeneratedSequence[] {
  const { prompts, maxNewTokens } = options;
  const batch = prompts.length;
  if (batch === 0) return [];
  if (prompts.some((prompt) => prompt.length === 0))
    throw new ShapeError('generate: every prompt needs at least one token (e.g. a BOS token)');
  const settings: SamplingSettings = {
    temperature: options.temperature ?? 1,
    topK: options.topK ?? 0,
    topP: options.topP ?? 1,
  };
  const padId = options.padId ?? 0;
  const randomFor = (row: number): RandomGenerator =>
    Array.isArray(options.random)
      ? (options.random as readonly RandomGenerator[])[row]!
      : (options.random as RandomGenerator);
  if (Array.isArray(options.random) && options.random.length !== batch) {
    throw new ShapeError(
      `generate: ${options.random.length} random generators for ${batch} prompts`,
    );
  }
  const chunkPositions = options.prefillChunkPositions ?? 4096;
  if (!Number.isInteger(chunkPositions) || chunkPositions < 1)
    throw new ShapeError(
      `generate: prefillChunkPositions must be a positive integer, got ${chunkPositions}`,
    );
  const stopTokens = new Set(options.stopTokens ?? []);
  const promptLength = Math.max(...prompts.map((prompt) => prompt.length));
  const capacity = promptLength + maxNewTokens;
  const { vocabSize, maxPositions } = model.config;
  if (capacity > maxPositions) {
    throw new ShapeError(
      `generate: prompt (${promptLength}) + maxNewTokens (${maxNewTokens}) exceeds the model's maxPositions ${maxPositions}`,
    );
  }
  const results: GeneratedSequence[] = prompts.map(() => ({
    tokens: [],
    logProbs: [],
    finishReason: 'length',
  }));
  if (maxNewTokens === 0) return results;
  const keyMask = new Float32Array(batch * capacity).fill(1);
  const ids = new Int32Array(batch * promptLength);
  const positions = new Int32Array(batch * promptLength);
  const nextPosition = new Int32Array(batch);
  prompts.forEach((prompt, row) => {
    const padding = promptLength - prompt.length;
    for (let slot = 0; slot < promptLength; slot++) {
      const real = slot >= padding;
      ids[row * promptLength + slot] = real ? prompt[slot - padding]! : padId;
      positions[row * promptLength + slot] = real ? slot - padding : 0;
      if (!real) keyMask[row * capacity + slot] = 0;
    }
    nextPosition[row] = prompt.length;
  });
  const cache = new KeyValueCache(model.config, batch, capacity);
  const finished = new Uint8Array(batch);
  try {
    noGrad(() => {
      const lastChunk = prefillAllButLastChunk(model, cache, {
        ids,
        positions,
        keyMask,
        batch,
        promptLength,
        chunkPositions,
      });
      let stepIds = lastChunk.ids;
      let stepPositions = lastChunk.positions;
      let stepLength = lastChunk.length;
      for (let step = 0; step < maxNewTokens; step++) {
        const lastRows = new Int32Array(batch);
        for (let row = 0; row < batch; row++) lastRows[row] = row * stepLength + stepLength - 1;
        const sampled = tidy(() => {
          const logits = model.forward({
            ids: stepIds,
            batch,
            length: stepLength,
            positions: stepPositions,
            keyMask,
            cache,
            rows: lastRows,
          });
          return sampleTokens(
            logits.data,
            batch,
            vocabSize,
            settings,
            prompts.map((_prompt, row) => (finished[row] ? null : randomFor(row))),
            Math.min(vocabSize, options.vocabularyLimit ?? vocabSize),
          );
        });
        stepIds = new Int32Array(batch);
        stepPositions = new Int32Array(batch);
        sampled.forEach((draw, row) => {
          if (draw) {
            results[row]!.tokens.push(draw.token);
            results[row]!.logProbs.push(draw.logProb);
            if (stopTokens.has(draw.token)) {
              finished[row] = 1;
              results[row]!.finishReason = 'stop';
            }
          }
          stepIds[row] = draw ? draw.token : padId;
          stepPositions[row] = nextPosition[row]!++;
        });
        stepLength = 1;
        if (finished.every((flag) => flag === 1)) break;
      }
    });
  } finally {
    cache.destroy();
  }
  return results;
}
