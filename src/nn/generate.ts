import { ShapeError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import { noGrad, selectRows, tidy } from '../tensor/index.js';
import { KeyValueCache } from './kv-cache.js';
import { padPrompts, prefillAllButLastChunk, prefillSharedPrefix, type Slots } from './prefill.js';
import { planSharedPrefix } from './shared-prefix.js';
import { sampleTokens, type SampledToken, type SamplingSettings } from './sampling.js';
import type { TransformerLM } from './transformer.js';
import { largest } from '../util/extremes.js';
import { checkAllocation } from '../util/memory-bound.js';
import { samplingRemedy } from './kv-cache.js';
import { planSampling } from './sampling-plan.js';

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
  /**
   * Prefill a prompt prefix shared by several rows once and copy its keys and values (the
   * same bits each row would compute; see shared-prefix.ts). @default true
   */
  sharePrefixes?: boolean;
  /**
   * Keep the final hidden state (after the last norm) that predicted each sampled token:
   * `hiddenStates` of each sequence. An update of this model reads π_old from them, through the
   * head alone, instead of running the layers over the turn again. @default false
   */
  keepHiddenStates?: boolean;
  /**
   * Called with each token as it is drawn (its row, id and log-prob), before the next step:
   * a server streams a turn with it.
   */
  onToken?: (row: number, token: number, logProb: number) => void;
  /**
   * Rows sampled at once: a larger batch is sampled in chunks of this many rows, one after
   * another, with the same results (every row draws from its own generator, so this needs one
   * generator per row). Memory then follows the chunk, not the batch. @default as many rows as
   * the sampling budget holds (TEAMTR_SAMPLING_MEMORY_MIB; see sampling-plan.ts)
   */
  rowsPerChunk?: number;
}

export interface GeneratedSequence {
  tokens: number[];
  /** log π(token | prefix) under the model at temperature 1, recorded while sampling. */
  logProbs: number[];
  finishReason: 'stop' | 'length';
  /** [tokens, hidden]: the final hidden states that predicted the tokens (keepHiddenStates). */
  hiddenStates?: Float32Array;
}

/**
 * Batched sampling with a KV cache. Prompts of different lengths are left-padded to a common
 * length; padding slots are masked out of attention and positions count real tokens only,
 * so each row computes exactly what it would alone. Deterministic given the generator.
 *
 * A batch larger than the sampling budget holds is sampled in chunks of rows (rowsPerChunk),
 * with the tokens one pass would draw: a row's draws come from its own generator, and its
 * keys, values and logits do not depend on the other rows nor on how much left padding its
 * chunk needs — to the bit for frozen weights (fixed-order products); weights trained in full
 * take the ordinary float32 product, whose summation order follows the row count (as between
 * any two batch sizes), so their log-probs may differ in the last bits. One generator shared
 * by the whole batch is drawn from in row order at every step, an order chunks would change,
 * so such a batch is sampled in one pass (and refused, as before, if its cache does not fit
 * the memory bound).
 */
export function generate(model: TransformerLM, options: GenerateOptions): GeneratedSequence[] {
  const { prompts } = options;
  const batch = prompts.length;
  if (batch === 0) return [];
  const run = resolveRun(model, options);
  const rowsPerChunk = chunkRows(model, options, run);
  if (rowsPerChunk >= batch) return generateTogether(model, options, run);
  const random = options.random as readonly RandomGenerator[];
  const results: GeneratedSequence[] = [];
  for (let start = 0; start < batch; start += rowsPerChunk) {
    const end = Math.min(batch, start + rowsPerChunk);
    const { onToken } = options;
    const chunk: GenerateOptions = {
      ...options,
      prompts: prompts.slice(start, end),
      random: random.slice(start, end),
      onToken: onToken && ((row, token, logProb) => onToken(start + row, token, logProb)),
    };
    for (const result of generateTogether(model, chunk, resolveRun(model, chunk)))
      results.push(result);
  }
  return results;
}

/**
 * The rows `generate` samples at once, after checking that the whole batch's results fit the
 * memory bound (they outlive the chunks).
 */
function chunkRows(model: TransformerLM, options: GenerateOptions, run: ResolvedRun): number {
  const plan = planSampling(model.config, {
    rows: run.batch,
    promptLength: run.promptLength,
    maxNewTokens: options.maxNewTokens,
    prefillChunkPositions: run.chunkPositions,
    keepHiddenStates: options.keepHiddenStates === true,
  });
  checkAllocation({
    what: `the results of sampling ${run.batch.toLocaleString('en-US')} sequences × ${options.maxNewTokens} tokens`,
    bytes: plan.resultBytes,
    remedy: samplingRemedy,
  });
  const requested = options.rowsPerChunk;
  if (requested === undefined) return Array.isArray(options.random) ? plan.rowsPerChunk : run.batch;
  if (!Number.isInteger(requested) || requested < 1)
    throw new ShapeError(`generate: rowsPerChunk must be a positive integer, got ${requested}`);
  if (requested < run.batch && !Array.isArray(options.random))
    throw new ShapeError(
      'generate: rowsPerChunk needs one random generator per prompt (a shared one is drawn from in row order across the whole batch)',
    );
  return requested;
}

/** Samples every row of `options.prompts` in one pass through one KV cache. */
function generateTogether(
  model: TransformerLM,
  options: GenerateOptions,
  run: ResolvedRun,
): GeneratedSequence[] {
  const { prompts, maxNewTokens } = options;
  const batch = prompts.length;
  const { padId, chunkPositions, promptLength, capacity } = run;
  const results: GeneratedSequence[] = prompts.map(() => ({
    tokens: [],
    logProbs: [],
    finishReason: 'length',
  }));
  if (maxNewTokens === 0) return results;
  const padded = padPrompts(prompts, { promptLength, capacity, padId, chunkPositions });
  const nextPosition = Int32Array.from(prompts, (prompt) => prompt.length);
  // Rows whose prompts begin alike (a group's trajectories) prefill that prefix once.
  const plan = options.sharePrefixes === false ? null : planSharedPrefix(prompts, promptLength);
  const cache = new KeyValueCache(model.config, batch, capacity);
  const finished = new Uint8Array(batch);
  const kept: Float32Array[][] | null = options.keepHiddenStates ? prompts.map(() => []) : null;
  const decoding: Decoding = {
    model,
    options,
    run,
    results,
    cache,
    keyMask: padded.keyMask,
    nextPosition,
    finished,
    kept,
  };
  try {
    noGrad(() => {
      if (plan) prefillSharedPrefix(model, cache, prompts, { plan, padId, chunkPositions });
      decode(decoding, prefillAllButLastChunk(model, cache, padded));
    });
  } finally {
    cache.destroy();
  }
  if (kept)
    results.forEach((result, row) => {
      result.hiddenStates = concatenate(kept[row]!, result.tokens.length * model.config.hiddenSize);
    });
  return results;
}

/** The validated settings of one `generate` call (batch > 0). */
interface ResolvedRun {
  batch: number;
  settings: SamplingSettings;
  padId: number;
  randomFor: (row: number) => RandomGenerator;
  chunkPositions: number;
  stopTokens: ReadonlySet<number>;
  promptLength: number;
  /** Cache slots a row needs: the padded prompt and every new token. */
  capacity: number;
}

/** What the decoding steps share: the call, its validated settings and the growing state. */
interface Decoding {
  model: TransformerLM;
  options: GenerateOptions;
  run: ResolvedRun;
  results: GeneratedSequence[];
  cache: KeyValueCache;
  keyMask: Float32Array;
  /** Each row's next position (real tokens only). */
  nextPosition: Int32Array;
  /** 1 once a row has emitted a stop token. */
  finished: Uint8Array;
  kept: Float32Array[][] | null;
}

/** Validates `options` against the model and fills in the defaults. */
function resolveRun(model: TransformerLM, options: GenerateOptions): ResolvedRun {
  const { prompts, maxNewTokens } = options;
  const batch = prompts.length;
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
  const promptLength = largest(prompts, (prompt) => prompt.length);
  const capacity = promptLength + maxNewTokens;
  const { maxPositions } = model.config;
  if (capacity > maxPositions) {
    throw new ShapeError(
      `generate: prompt (${promptLength}) + maxNewTokens (${maxNewTokens}) exceeds the model's maxPositions ${maxPositions}`,
    );
  }
  return { batch, settings, padId, randomFor, chunkPositions, stopTokens, promptLength, capacity };
}

/** Samples up to maxNewTokens tokens a row, starting from the prompts' last chunk. */
function decode(decoding: Decoding, lastChunk: Slots): void {
  const { batch } = decoding.run;
  const { maxNewTokens } = decoding.options;
  let stepIds = lastChunk.ids;
  let stepPositions = lastChunk.positions;
  let stepLength = lastChunk.length;
  for (let step = 0; step < maxNewTokens; step++) {
    const sampled = sampleStep(decoding, stepIds, stepPositions, stepLength);
    stepIds = new Int32Array(batch);
    stepPositions = new Int32Array(batch);
    recordDraws(decoding, sampled, stepIds, stepPositions);
    stepLength = 1;
    if (decoding.finished.every((flag) => flag === 1)) break;
  }
}

/** Runs one step's slots [batch, length] through the model and draws each unfinished row's token. */
function sampleStep(
  decoding: Decoding,
  stepIds: Int32Array,
  stepPositions: Int32Array,
  stepLength: number,
): Array<SampledToken | null> {
  const { model, options, run, finished, kept } = decoding;
  const { batch } = run;
  const { vocabSize } = model.config;
  const lastRows = new Int32Array(batch);
  for (let row = 0; row < batch; row++) lastRows[row] = row * stepLength + stepLength - 1;
  return tidy(() => {
    // model.forward's operations, with the hidden states in reach.
    const hidden = selectRows(
      model.forwardHidden({
        ids: stepIds,
        batch,
        length: stepLength,
        positions: stepPositions,
        keyMask: decoding.keyMask,
        cache: decoding.cache,
      }),
      lastRows,
    ); // [batch, hidden]
    if (kept) keepRows(kept, hidden.data, finished);
    const logits = model.head(hidden);
    return sampleTokens(
      logits.data,
      batch,
      vocabSize,
      run.settings,
      options.prompts.map((_prompt, row) => (finished[row] ? null : run.randomFor(row))),
      Math.min(vocabSize, options.vocabularyLimit ?? vocabSize),
    );
  });
}

/**
 * Appends each draw to its row's result, marks rows that drew a stop token finished, and
 * fills the next step's ids (finished rows feed padding) and positions.
 */
function recordDraws(
  decoding: Decoding,
  sampled: readonly (SampledToken | null)[],
  stepIds: Int32Array,
  stepPositions: Int32Array,
): void {
  const { options, results, finished, nextPosition } = decoding;
  const { stopTokens, padId } = decoding.run;
  sampled.forEach((draw, row) => {
    if (draw) {
      results[row]!.tokens.push(draw.token);
      results[row]!.logProbs.push(draw.logProb);
      options.onToken?.(row, draw.token, draw.logProb);
      if (stopTokens.has(draw.token)) {
        finished[row] = 1;
        results[row]!.finishReason = 'stop';
      }
    }
    stepIds[row] = draw ? draw.token : padId;
    stepPositions[row] = nextPosition[row]!++;
  });
}

/** Appends each unfinished row's hidden state [hidden] (a copy) to its list. */
function keepRows(kept: Float32Array[][], hidden: Float32Array, finished: Uint8Array): void {
  const width = hidden.length / kept.length;
  kept.forEach((rows, row) => {
    if (!finished[row]) rows.push(hidden.slice(row * width, (row + 1) * width));
  });
}

function concatenate(parts: readonly Float32Array[], length: number): Float32Array {
  const result = new Float32Array(length);
  let offset = 0;
  for (const part of parts) {
    result.set(part, offset);
    offset += part.length;
  }
  return result;
}
