import { noGrad, tidy } from '../tensor/index.js';
import { ShapeError } from '../util/errors.js';
import { KeyValueCache } from './kv-cache.js';
import { Linear } from './linear.js';
import type { Module } from './module.js';
import { padPrompts, prefillSharedPrefix, sliceSlots } from './prefill.js';
import { completionHiddenStates, type ScoringItem } from './score.js';
import { planSharedPrefix } from './shared-prefix.js';
import type { TransformerLM } from './transformer.js';
import { largest } from '../util/extremes.js';

/**
 * The trust region scores the same items again and again (π_old, a measurement after every
 * step), and the items of a group begin with the same prompt: a quarter of a SmolLM2-shape
 * team's scoring positions are a prompt its group has run already. Through a KV cache that
 * prefix runs once per group, as generation prefills it (shared-prefix.ts), and each item then
 * runs only its own tokens. The hidden states are the plain pass's bit for bit wherever sampled
 * log-probs equal scored ones (each row is computed alone, in one summation order, and
 * attention skips left padding), which shared-prefix-scoring.test.ts checks per model kind;
 * a model with trainable float32 matrices, whose products choose their kernels by row count,
 * takes the plain pass. The gradient steps share the prefix too, with gradients and without a
 * cache (shared-prefix-gradients.ts).
 */

/**
 * Whether every matrix product of the model sums each entry in one order whatever the number
 * of rows: its float32 matrices are frozen (Linear and the tied head then take the fixed-order
 * kernels; LoRA adapters always do) or stored in bfloat16.
 */
export function sumsInOneOrder(model: TransformerLM): boolean {
  if (!model.outputHead && model.tokenEmbedding.requiresGrad) return false;
  const pending: Module[] = [model];
  while (pending.length > 0) {
    const module = pending.pop()!;
    if (module instanceof Linear && module.weight.requiresGrad) return false;
    pending.push(...module.childModules().map((child) => child.module));
  }
  return true;
}

export interface SharedPrefixScoringOptions {
  /**
   * Bytes of keys and values one cache may hold; items beyond it run in further groups.
   * @default 256 MiB
   */
  cacheBudgetBytes?: number;
  /** Positions (rows × slots) per pass through the cache. @default 4096 */
  chunkPositions?: number;
}

/**
 * completionHiddenStates' rows — the final hidden states that predict each completion token,
 * [totalTokens, hidden] item by item — with the context prefixes that items share computed once.
 * Groups where sharing saves under a tenth of the positions take the plain pass, as does a
 * model that does not sum in one order (sumsInOneOrder).
 */
export function completionHiddenStatesSharingPrefixes(
  model: TransformerLM,
  items: readonly ScoringItem[],
  options: SharedPrefixScoringOptions = {},
): Float32Array {
  const { hiddenSize, layers, kvHeads, headDim } = model.config;
  const cacheBudgetBytes = options.cacheBudgetBytes ?? 256 * 1024 * 1024;
  const chunkPositions = options.chunkPositions ?? 4096;
  items.forEach((item, index) => {
    if (item.context.length === 0)
      throw new ShapeError(`scoring: item ${index} has an empty context (prepend a BOS token)`);
  });
  if (!sumsInOneOrder(model)) return completionHiddenStates(model, items);
  const total = items.reduce((sum, item) => sum + item.completion.length, 0);
  const result = new Float32Array(total * hiddenSize);
  const bytesPerSlot = layers * 2 * kvHeads * headDim * 4;
  let offset = 0;
  for (const group of cacheGroups(items, Math.floor(cacheBudgetBytes / bytesPerSlot))) {
    const rows =
      sharedPrefixPass(model, group, chunkPositions) ?? completionHiddenStates(model, group);
    result.set(rows, offset * hiddenSize);
    offset += rows.length / hiddenSize;
  }
  return result;
}

/** Consecutive items whose cache (items × longest sequence slots) fits `maxSlots`. */
function cacheGroups(items: readonly ScoringItem[], maxSlots: number): ScoringItem[][] {
  const groups: ScoringItem[][] = [];
  let current: ScoringItem[] = [];
  let longest = 0;
  for (const item of items) {
    const length = item.context.length + item.completion.length;
    const wider = Math.max(longest, length);
    if (current.length > 0 && (current.length + 1) * wider > maxSlots) {
      groups.push(current);
      current = [];
      longest = 0;
    }
    current.push(item);
    longest = Math.max(longest, length);
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/**
 * One group through a cache: the shared prefixes first (their keys and values copied to every
 * row that has them), then every row's own slots in chunks, reading the hidden states of the
 * positions that predict completion tokens. Null when no plan saves enough.
 */
function sharedPrefixPass(
  model: TransformerLM,
  items: readonly ScoringItem[],
  chunkPositions: number,
): Float32Array | null {
  const sequences = items.map((item) => [...item.context, ...item.completion]);
  const length = largest(sequences, (sequence) => sequence.length);
  if (length > model.config.maxPositions)
    throw new ShapeError(
      `scoring: a sequence of ${length} tokens exceeds maxPositions ${model.config.maxPositions}`,
    );
  // A row's completion is predicted from its last context position on: those stay its own.
  const shareable = items.map((item) => item.context.length - 1);
  const plan = planSharedPrefix(sequences, length, 0.1, shareable);
  if (!plan) return null;
  const { hiddenSize } = model.config;
  const batch = items.length;
  const padId = 0;
  const padded = padPrompts(sequences, {
    promptLength: length,
    capacity: length,
    padId,
    chunkPositions,
  });
  const offsets = [0];
  for (const item of items) offsets.push(offsets.at(-1)! + item.completion.length);
  const result = new Float32Array(offsets.at(-1)! * hiddenSize);
  const cache = new KeyValueCache(model.config, batch, length);
  try {
    noGrad(() => {
      prefillSharedPrefix(model, cache, sequences, { plan, padId, chunkPositions });
      const chunkLength = Math.max(1, Math.floor(chunkPositions / batch));
      // The last slot is every row's last token, which predicts nothing here.
      for (let start = plan.start; start < length - 1; start += chunkLength) {
        const end = Math.min(start + chunkLength, length - 1);
        const slots = sliceSlots(padded, start, end);
        tidy(() => {
          const hidden = model.forwardHidden({
            ...slots,
            batch,
            keyMask: padded.keyMask,
            cache,
          }).data; // [batch, end − start, hidden]
          items.forEach((item, row) => {
            const padding = length - sequences[row]!.length;
            const first = padding + item.context.length - 1; // slot predicting completion[0]
            for (let slot = Math.max(start, first); slot < Math.min(end, length - 1); slot++) {
              const source = (row * (end - start) + slot - start) * hiddenSize;
              const target = (offsets[row]! + slot - first) * hiddenSize;
              result.set(hidden.subarray(source, source + hiddenSize), target);
            }
          });
        });
      }
    });
  } finally {
    cache.destroy();
  }
  return result;
}
