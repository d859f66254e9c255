import {
  completionDistributionsAndLogProbs,
  completionHiddenStates,
  completionLogDistributions,
  lmHeadIsFrozen,
  logDistributionsAndLogProbsFromHidden,
  logDistributionsFromHidden,
  type ScoringItem,
} from '../../../nn/score.js';
import {
  completionHiddenStatesSharingPrefixes,
  sumsInOneOrder,
} from '../../../nn/shared-prefix-scoring.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { release } from '../../../tensor/index.js';
import { captureSnapshot, restoreSnapshot, type ParameterSnapshot } from '../parameter-state.js';

/**
 * Full log-distributions [positions, vocab] held at once by an exact-KL measurement. A real
 * vocabulary makes them the largest arrays of an update (SmolLM2's 49,152 entries: 197 kB per
 * token, 1.8 GB for 9,216 tokens, per copy); beyond this budget they are produced chunk by chunk.
 */
export const distributionBudgetBytes = 64 * 1024 * 1024;

/** Consecutive scoring items and where their completion tokens sit in the flat token order. */
export interface PositionChunk {
  items: readonly ScoringItem[];
  /** Flat index of the chunk's first completion token. */
  start: number;
  positions: number;
}

/**
 * The items in consecutive chunks of at most `maxPositions` completion tokens each (an item is
 * never split, so a longer item is a chunk of its own).
 */
export function positionChunks(
  items: readonly ScoringItem[],
  maxPositions: number,
): PositionChunk[] {
  const chunks: PositionChunk[] = [];
  let current: PositionChunk = { items: [], start: 0, positions: 0 };
  for (const item of items) {
    const length = item.completion.length;
    if (current.items.length > 0 && current.positions + length > maxPositions) {
      chunks.push(current);
      current = { items: [], start: current.start + current.positions, positions: 0 };
    }
    (current.items as ScoringItem[]).push(item);
    current.positions += length;
  }
  if (current.items.length > 0) chunks.push(current);
  return chunks;
}

/** A pair's `release`: the arrays go back to the pool on the first call only. */
function releaserOf(arrays: Float32Array[]): () => void {
  let released = false;
  return () => {
    if (released) throw new Error('a distribution pair was released twice');
    released = true;
    for (const array of arrays) release(array);
  };
}

const noneKnown: KnownHidden = { positions: new Int32Array(0), hidden: new Float32Array(0) };

/** One chunk's log-distributions under the old policy and under the model as it is now. */
export interface DistributionPair {
  chunk: PositionChunk;
  /** [chunk.positions, vocab] log π_old. */
  old: Float32Array;
  /** [chunk.positions, vocab] log π_current. */
  current: Float32Array;
  /** [chunk.positions] log π_current of each completion token, gathered from the same logits. */
  currentLogProbs: Float32Array;
  /**
   * Gives the chunk's arrays made for this pair (not a π_old kept for every measurement) back
   * to the tensor memory pool, for the next chunk's or measurement's to reuse instead of new
   * ones; call once done with the pair and never touch its arrays afterwards. Once only; a pair
   * never released is left to the garbage collector.
   */
  release(): void;
}

/**
 * Final hidden states of some of the tokens at the parameters in question, from a forward pass
 * that ran anyway (a gradient step's): row r of `hidden` [rows, hiddenSize] is the token at flat
 * index `positions[r]` of the items' scoring order. The tokens of an item come all or none.
 */
export interface KnownHidden {
  positions: Int32Array;
  hidden: Float32Array;
}

/**
 * π_old — the model's policy when this was constructed — at a fixed set of tokens, for exact
 * comparisons with the policy the model has later. When all its log-distributions fit the
 * budget they are computed now and kept (what the trust region always did). Otherwise they are
 * produced chunk by chunk when compared, so memory stays at a chunk's worth: when the LM head is
 * frozen (LoRA adapters on the layers), from the final hidden states kept now (hidden-size
 * floats per token instead of vocabulary-size ones), which the head alone turns back into
 * π_old; else from a copy of the trainable parameters, with one more forward pass per chunk and
 * comparison.
 *
 * Hidden states a forward pass at the same parameters already produced (`KnownHidden`, at
 * construction for π_old and in `pairs` for the current policy) spare the layers those tokens:
 * only the other items run through them, and the LM head turns the assembled hidden states into
 * the same distributions. An item's hidden states are the same bits whichever items share its
 * forward pass: the native kernels sum each entry of a product in one order whatever its number
 * of rows, above the 16 rows where the skinny kernels take over (native/src/matmul.c), and a
 * pass over the layers has a row per position of every item in it. The head runs on the same
 * chunks as without known hidden states, so no number changes (trust-region-passes.test.ts).
 *
 * A model whose products sum in one order at every row count (LoRA agents, frozen weights:
 * sumsInOneOrder) runs the layers with the context prefixes items share computed once
 * (completionHiddenStatesSharingPrefixes: a group's prompt), for the same bits again.
 */
export class ReferenceDistributions {
  readonly chunks: readonly PositionChunk[];
  private readonly maxPositions: number;
  /** Flat index of each item's first completion token; the last entry is the total. */
  private readonly itemStarts: number[];
  private readonly stored: Float32Array | null;
  private readonly hidden: Float32Array[] | null;
  private readonly snapshot: ParameterSnapshot | null;
  private readonly sharesPrefixes: boolean;

  constructor(
    private readonly model: TransformerLM,
    private readonly items: readonly ScoringItem[],
    budgetBytes = distributionBudgetBytes,
    startingHidden?: KnownHidden,
    options: { sharePrefixes?: boolean } = {},
  ) {
    this.sharesPrefixes = (options.sharePrefixes ?? true) && sumsInOneOrder(model);
    const perPosition = 4 * model.config.vocabSize;
    this.maxPositions = Math.max(1, Math.floor(budgetBytes / perPosition));
    this.chunks = positionChunks(items, this.maxPositions);
    this.itemStarts = [0];
    for (const item of items)
      this.itemStarts.push(this.itemStarts.at(-1)! + item.completion.length);
    const single = this.chunks.length <= 1;
    const fromHidden = !single && lmHeadIsFrozen(model);
    const known =
      (startingHidden || this.sharesPrefixes) && (single || fromHidden)
        ? this.hiddenStates(startingHidden)
        : null;
    if (single) {
      this.stored = known
        ? logDistributionsFromHidden(model, known)
        : completionLogDistributions(model, items);
    } else this.stored = null;
    this.hidden = fromHidden
      ? this.chunks.map((chunk) =>
          known ? this.chunkRows(known, chunk) : completionHiddenStates(model, chunk.items),
        )
      : null;
    this.snapshot = single || fromHidden ? null : captureSnapshot(model.trainableParameters());
  }

  /**
   * Every chunk's old and current log-distributions, one chunk in memory at a time; `current`:
   * hidden states the caller has at the current parameters, so only the other items need the
   * layers.
   */
  *pairs(current?: KnownHidden): Generator<DistributionPair> {
    const hidden = current || this.sharesPrefixes ? this.hiddenStates(current) : null;
    for (const [index, chunk] of this.chunks.entries()) {
      const now =
        hidden && chunk.positions > 0
          ? logDistributionsAndLogProbsFromHidden(
              this.model,
              this.chunkRows(hidden, chunk),
              Int32Array.from(chunk.items.flatMap((item) => item.completion)),
            )
          : completionDistributionsAndLogProbs(this.model, chunk.items);
      const old = this.stored ?? this.recompute(index);
      yield {
        chunk,
        old,
        current: now.distributions,
        currentLogProbs: now.logProbs,
        release: releaserOf(old === this.stored ? [now.distributions] : [now.distributions, old]),
      };
    }
  }

  /**
   * Final hidden states [positions, hidden] of every token at the current parameters: the rows
   * `known` has, and the other items' from forward passes over them, at most a chunk's worth of
   * positions at a time.
   */
  private hiddenStates(known: KnownHidden = noneKnown): Float32Array {
    const width = this.model.config.hiddenSize;
    const result = new Float32Array(this.itemStarts.at(-1)! * width);
    const covered = new Uint8Array(this.itemStarts.at(-1)!);
    known.positions.forEach((position, row) => {
      result.set(known.hidden.subarray(row * width, (row + 1) * width), position * width);
      covered[position] = 1;
    });
    const missing = this.items
      .map((_item, index) => index)
      .filter((index) =>
        covered.subarray(this.itemStarts[index], this.itemStarts[index + 1]).includes(0),
      );
    const missingItems = missing.map((index) => this.items[index]!);
    const rows = this.sharesPrefixes
      ? completionHiddenStatesSharingPrefixes(this.model, missingItems)
      : this.chunkedHiddenStates(missingItems);
    let row = 0;
    for (const index of missing) {
      const length = this.items[index]!.completion.length;
      result.set(
        rows.subarray(row * width, (row + length) * width),
        this.itemStarts[index]! * width,
      );
      row += length;
    }
    return result;
  }

  /** completionHiddenStates of `items`, a chunk's worth of positions per forward pass. */
  private chunkedHiddenStates(items: readonly ScoringItem[]): Float32Array {
    const width = this.model.config.hiddenSize;
    const chunks = positionChunks(items, this.maxPositions);
    const result = new Float32Array(
      chunks.reduce((total, chunk) => total + chunk.positions, 0) * width,
    );
    for (const chunk of chunks)
      result.set(completionHiddenStates(this.model, chunk.items), chunk.start * width);
    return result;
  }

  /** The rows of a chunk's tokens in hidden states of every token. */
  private chunkRows(hidden: Float32Array, chunk: PositionChunk): Float32Array {
    const width = this.model.config.hiddenSize;
    return hidden.subarray(chunk.start * width, (chunk.start + chunk.positions) * width);
  }

  /** log π_old of one chunk: from its kept hidden states, or from the copied parameters. */
  private recompute(index: number): Float32Array {
    if (this.hidden) return logDistributionsFromHidden(this.model, this.hidden[index]!);
    const chunk = this.chunks[index]!;
    const parameters = this.model.trainableParameters();
    const now = captureSnapshot(parameters);
    restoreSnapshot(parameters, this.snapshot!);
    try {
      return completionLogDistributions(this.model, chunk.items);
    } finally {
      restoreSnapshot(parameters, now);
    }
  }
}
