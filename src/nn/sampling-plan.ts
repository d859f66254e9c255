import { limitOf, memoryBoundBytes } from '../util/limits.js';
import type { ModelConfig } from './config.js';

/**
 * How many rows `generate` samples at once. A batch's memory is mostly per row — each row's
 * keys and values for every layer and slot, and a pass's activations — so a batch sized by
 * input (the schema allows rollout.problemsPerBatch × rollout.groupSize up to 1,000,000 rows)
 * would need memory in proportion. Rows are instead sampled in chunks that fit the sampling
 * budget: peak memory is set by the chunk, not the batch, and the results are the same bits
 * (each row's draws come from its own generator, and every kernel computes a row alone).
 */

export interface SamplingShape {
  rows: number;
  /** The longest prompt, in tokens. */
  promptLength: number;
  maxNewTokens: number;
  /** Prompt positions per prefill pass (GenerateOptions.prefillChunkPositions). */
  prefillChunkPositions: number;
  keepHiddenStates: boolean;
}

export interface SamplingPlan {
  /** Rows sampled together (≥ 1; the whole batch when it fits). */
  rowsPerChunk: number;
  chunks: number;
  /** Working memory a row of a chunk adds: its caches, its share of a pass, its bookkeeping. */
  bytesPerRow: number;
  /** Working memory of a chunk whatever its rows: a prefill pass of prefillChunkPositions. */
  fixedBytes: number;
  /** Peak working memory of one chunk: fixedBytes + rowsPerChunk × bytesPerRow. */
  chunkBytes: number;
  /** What the whole batch's results hold once sampled (tokens, log-probs, hidden states). */
  resultBytes: number;
}

const float32 = 4;
const mebibyte = 2 ** 20;
/** A token of a result: its id and log-prob in JavaScript arrays (8 bytes each). */
const resultBytesPerToken = 16;

/**
 * The bytes sampling may take at once: TEAMTR_SAMPLING_MEMORY_MIB, or less when the machine's
 * memory bound (TEAMTR_MEMORY_SHARE) is smaller.
 */
export function samplingBudgetBytes(): number {
  return Math.min(limitOf('samplingMemoryMiB') * mebibyte, memoryBoundBytes());
}

/**
 * Floats one position holds while it runs through one block (blocks run one at a time without
 * gradients, transformer.ts): the residual stream and its norm in and out, queries before and
 * after rotation and the attention output, keys before and after rotation and values, the
 * scores against every slot, and the MLP's up, gate and activation and its output.
 */
function activationFloats(config: ModelConfig, capacity: number): number {
  const { hiddenSize, heads, headDim, kvHeads, intermediateSize } = config;
  return (
    5 * hiddenSize +
    3 * heads * headDim +
    3 * kvHeads * headDim +
    heads * capacity +
    3 * intermediateSize
  );
}

/** Plans chunks of rows for sampling `shape` from a model of `config` within `budgetBytes`. */
export function planSampling(
  config: ModelConfig,
  shape: SamplingShape,
  budgetBytes: number = samplingBudgetBytes(),
): SamplingPlan {
  const { rows, promptLength, maxNewTokens, prefillChunkPositions } = shape;
  const capacity = promptLength + maxNewTokens;
  const keyValueFloats = 2 * config.layers * config.kvHeads * config.headDim;
  const activation = activationFloats(config, capacity) * float32;
  const bytesPerRow =
    // The row's cache, and at most its prompt in the cache of a shared prefix's leaders.
    keyValueFloats * (capacity + promptLength) * float32 +
    // A decode step: one position through a block, then the logits and their sampling.
    activation +
    config.vocabSize * (float32 + 8) +
    // The key mask, the padded ids and positions, and each prefill pass's slices of them.
    capacity * float32 +
    4 * promptLength * float32 +
    (shape.keepHiddenStates ? maxNewTokens * config.hiddenSize * float32 : 0);
  // A prefill pass runs max(prefillChunkPositions, rows) positions: those past the rows' own
  // position are the fixed part.
  const fixedBytes = prefillChunkPositions * activation;
  const fitting = Math.floor((budgetBytes - fixedBytes) / bytesPerRow);
  const rowsPerChunk = Math.max(1, Math.min(rows, fitting));
  const hiddenStateBytes = shape.keepHiddenStates ? config.hiddenSize * float32 : 0;
  return {
    rowsPerChunk,
    chunks: Math.ceil(rows / rowsPerChunk),
    bytesPerRow,
    fixedBytes,
    chunkBytes: fixedBytes + rowsPerChunk * bytesPerRow,
    resultBytes: rows * maxNewTokens * (resultBytesPerToken + hiddenStateBytes),
  };
}
