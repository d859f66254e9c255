import { tidy } from '../tensor/index.js';
import { KeyValueCache } from './kv-cache.js';
import type { SharedPrefixPlan } from './shared-prefix.js';
import type { TransformerLM } from './transformer.js';
import { largest } from '../util/extremes.js';

/**
 * Prompt passes through a KV cache for `generate`: left padding, passes in chunks of bounded
 * size, and a prefix shared by several rows computed once (shared-prefix.ts).
 */

export interface PaddedPrompts {
  /** [batch·promptLength] left-padded ids and their positions (real tokens count from 0). */
  ids: Int32Array;
  positions: Int32Array;
  /** [batch, capacity] 1 = a real token, 0 = padding. */
  keyMask: Float32Array;
  batch: number;
  promptLength: number;
  /** Positions per prefill pass (see GenerateOptions.prefillChunkPositions). */
  chunkPositions: number;
}

/** Left-pads `prompts` to `promptLength` slots of a cache of `capacity` slots. */
export function padPrompts(
  prompts: readonly (readonly number[])[],
  settings: { promptLength: number; capacity: number; padId: number; chunkPositions: number },
): PaddedPrompts {
  const { promptLength, capacity, padId, chunkPositions } = settings;
  const batch = prompts.length;
  const keyMask = new Float32Array(batch * capacity).fill(1);
  const ids = new Int32Array(batch * promptLength);
  const positions = new Int32Array(batch * promptLength);
  prompts.forEach((prompt, row) => {
    const padding = promptLength - prompt.length;
    for (let slot = 0; slot < promptLength; slot++) {
      const real = slot >= padding;
      ids[row * promptLength + slot] = real ? prompt[slot - padding]! : padId;
      positions[row * promptLength + slot] = real ? slot - padding : 0;
      if (!real) keyMask[row * capacity + slot] = 0;
    }
  });
  return { ids, positions, keyMask, batch, promptLength, chunkPositions };
}

export interface Slots {
  ids: Int32Array;
  positions: Int32Array;
  length: number;
}

export function sliceSlots(prompts: PaddedPrompts, start: number, end: number): Slots {
  const { batch, promptLength } = prompts;
  if (start === 0 && end === promptLength)
    return { ids: prompts.ids, positions: prompts.positions, length: promptLength };
  const length = end - start;
  const ids = new Int32Array(batch * length);
  const positions = new Int32Array(batch * length);
  for (let row = 0; row < batch; row++) {
    const from = row * promptLength;
    ids.set(prompts.ids.subarray(from + start, from + end), row * length);
    positions.set(prompts.positions.subarray(from + start, from + end), row * length);
  }
  return { ids, positions, length };
}

/**
 * Runs the prompt slots from the cache's length up to the last chunk through the cache (no
 * logits: only the last chunk's final slot yields the first token's) and returns the last
 * chunk's ids and positions for the first sampling step. Short prompts are one pass.
 */
export function prefillAllButLastChunk(
  model: TransformerLM,
  cache: KeyValueCache,
  prompts: PaddedPrompts,
): Slots {
  const { batch, promptLength, keyMask } = prompts;
  const chunkLength = Math.max(1, Math.floor(prompts.chunkPositions / batch));
  let start = cache.length;
  for (; promptLength - start > chunkLength; start += chunkLength) {
    const chunk = sliceSlots(prompts, start, start + chunkLength);
    tidy(() => {
      model.forwardHidden({ ...chunk, batch, keyMask, cache });
    });
  }
  return sliceSlots(prompts, start, promptLength);
}

/**
 * Fills the slots before `plan.start` of every row: the plan's leader rows run their prompt
 * prefixes through a cache of their own (in chunks, no logits), then each row copies its
 * prefix's keys and values from its leader. The cache then stands at `plan.start`.
 */
export function prefillSharedPrefix(
  model: TransformerLM,
  cache: KeyValueCache,
  prompts: readonly (readonly number[])[],
  settings: { plan: SharedPrefixPlan; padId: number; chunkPositions: number },
): void {
  const { plan, padId, chunkPositions } = settings;
  const promptLength = largest(prompts, (prompt) => prompt.length);
  const leaderLength = largest(plan.leaders, (leader) => leader.tokens);
  const leaderPrompts = plan.leaders.map(({ row, tokens }) => prompts[row]!.slice(0, tokens));
  const leaderCache = new KeyValueCache(model.config, leaderPrompts.length, leaderLength);
  try {
    const padded = padPrompts(leaderPrompts, {
      promptLength: leaderLength,
      capacity: leaderLength,
      padId,
      chunkPositions,
    });
    const last = prefillAllButLastChunk(model, leaderCache, padded);
    tidy(() => {
      model.forwardHidden({
        ...last,
        batch: padded.batch,
        keyMask: padded.keyMask,
        cache: leaderCache,
      });
    });
    for (const { row, leader, tokens } of plan.copies) {
      cache.copyRows(leaderCache, {
        sourceRow: leader,
        sourceStart: leaderLength - plan.leaders[leader]!.tokens,
        row,
        start: promptLength - prompts[row]!.length,
        length: tokens,
      });
    }
  } finally {
    leaderCache.destroy();
  }
  cache.advance(plan.start);
}
