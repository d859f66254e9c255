import { ShapeError } from '../util/errors.js';
import {
  gatherLogProbs,
  logSoftmax,
  noGrad,
  selectRows,
  tensor,
  tidy,
  type Tensor,
} from '../tensor/index.js';
import type { ForwardInput, TransformerLM } from './transformer.js';
import { largest } from '../util/extremes.js';

/** A (context, completion) pair of token ids; the completion is what gets scored. */
export interface ScoringItem {
  context: readonly number[];
  completion: readonly number[];
}

/** A right-padded batch of items and where each completion token's logits sit. */
export interface ScoringBatch {
  ids: Int32Array;
  batch: number;
  length: number;
  /** Flattened row (b·length + t) whose logits predict each completion token, item by item. */
  rows: Int32Array;
  /** The completion tokens, in the same order. */
  targets: Int32Array;
  /** offsets[i] = index of item i's first completion token; offsets[items] = total. */
  offsets: Int32Array;
  /** [batch, length] 1 = real token. */
  keyMask: Float32Array;
}

/**
 * Packs items into one right-padded batch. Token t of item i's completion sits at position
 * context.length + t and is predicted by the logits one position earlier.
 */
export function packScoringBatch(
  items: readonly ScoringItem[],
  maxPositions: number,
  padId = 0,
): ScoringBatch {
  const batch = items.length;
  const length = Math.max(
    1,
    largest(items, (item) => item.context.length + item.completion.length),
  );
  if (length > maxPositions)
    throw new ShapeError(
      `scoring: a sequence of ${length} tokens exceeds maxPositions ${maxPositions}`,
    );
  const ids = new Int32Array(batch * length).fill(padId);
  const keyMask = new Float32Array(batch * length);
  const offsets = new Int32Array(batch + 1);
  let total = 0;
  items.forEach((item, index) => {
    if (item.context.length === 0)
      throw new ShapeError(`scoring: item ${index} has an empty context (prepend a BOS token)`);
    offsets[index] = total;
    total += item.completion.length;
  });
  offsets[batch] = total;
  const rows = new Int32Array(total);
  const targets = new Int32Array(total);
  items.forEach((item, index) => {
    const sequence = [...item.context, ...item.completion];
    sequence.forEach((token, position) => {
      ids[index * length + position] = token;
      keyMask[index * length + position] = 1;
    });
    item.completion.forEach((token, offset) => {
      const cursor = offsets[index]! + offset;
      rows[cursor] = index * length + item.context.length + offset - 1;
      targets[cursor] = token;
    });
  });
  return { ids, batch, length, rows, targets, offsets, keyMask };
}

export interface CompletionScores {
  /** [totalTokens] log π(token | prefix), item by item (see offsets). Differentiable. */
  logProbs: Tensor;
  /** [totalTokens] entropy of each predictive distribution, when requested. */
  entropy: Tensor | null;
  offsets: Int32Array;
}

/**
 * The logits that predict each completion token, [totalTokens, vocab] item by item, from one
 * batched forward pass that computes logits only there; with the packed batch (targets,
 * offsets) they belong to.
 */
export function completionLogits(
  model: TransformerLM,
  items: readonly ScoringItem[],
): { logits: Tensor; packed: ScoringBatch } {
  const packed = packScoringBatch(items, model.config.maxPositions);
  const logits = model.forward({ ...forwardInput(packed), rows: packed.rows });
  return { logits, packed };
}

/** A packed batch as a forward pass's input: its ids, shape and key mask (no cache). */
function forwardInput(packed: ScoringBatch): ForwardInput {
  return { ids: packed.ids, batch: packed.batch, length: packed.length, keyMask: packed.keyMask };
}

/**
 * Per-token log-probabilities (and entropies) of each completion given its context, in one
 * batched forward pass that computes logits only at completion positions. Differentiable
 * unless called under noGrad.
 */
export function scoreCompletions(
  model: TransformerLM,
  items: readonly ScoringItem[],
  options: { entropy?: boolean } = {},
): CompletionScores {
  const { logits, packed } = completionLogits(model, items);
  const { logProbs, entropy } = gatherLogProbs(logits, packed.targets, {
    entropy: options.entropy ?? false,
  });
  return { logProbs, entropy, offsets: packed.offsets };
}

/**
 * scoreCompletions' log-probabilities from the very same operations (the model's forward with
 * `rows`: final hidden states, their completion rows, the LM head, the fused gather), and a copy
 * of those completion rows' final hidden states [totalTokens, hidden] taken on the way. The
 * hidden states are what the LM head turns into full distributions: a caller that needs this
 * pass's distributions too (a trust-region measurement at the same parameters) gets them from
 * logDistributionsAndLogProbsFromHidden without a second pass through the layers.
 */
export function scoreCompletionsKeepingHidden(
  model: TransformerLM,
  items: readonly ScoringItem[],
): { logProbs: Tensor; hidden: Float32Array; offsets: Int32Array } {
  const packed = packScoringBatch(items, model.config.maxPositions);
  const all = model.forwardHidden(forwardInput(packed));
  const hidden = selectRows(all, packed.rows); // [totalTokens, hidden]
  const { logProbs } = gatherLogProbs(model.head(hidden), packed.targets);
  return { logProbs, hidden: hidden.data.slice(), offsets: packed.offsets };
}

/** Plain arrays of per-token log-probs and entropies, one per item (no gradients). */
export function scoreToArrays(
  model: TransformerLM,
  items: readonly ScoringItem[],
): Array<{ logProbs: Float32Array; entropy: Float32Array }> {
  return noGrad(() =>
    tidy(() => {
      const scores = scoreCompletions(model, items, { entropy: true });
      const logProbs = scores.logProbs.data;
      const entropy = scores.entropy!.data;
      return items.map((_item, index) => {
        const start = scores.offsets[index]!;
        const end = scores.offsets[index + 1]!;
        return { logProbs: logProbs.slice(start, end), entropy: entropy.slice(start, end) };
      });
    }),
  );
}

/**
 * The full predictive log-distribution at every completion token: [totalTokens, vocab], item
 * by item. Cached before an update, it is the reference for exact per-token KL afterwards.
 *
 * This function and the ones below return the arrays their tensors computed, not copies (a
 * chunk of distributions is up to 64 MB): the caller owns them and may give them back to the
 * tensor memory pool with `release` once done with them.
 */
export function completionLogDistributions(
  model: TransformerLM,
  items: readonly ScoringItem[],
): Float32Array {
  return completionDistributionsAndLogProbs(model, items).distributions;
}

/**
 * completionLogDistributions, and from the same logits the log-probability of each completion
 * token as scoreCompletions computes it (the fused gather), so a caller that needs both pays one
 * forward pass. On the same items the log-probs equal scoreToArrays' bit for bit.
 */
export function completionDistributionsAndLogProbs(
  model: TransformerLM,
  items: readonly ScoringItem[],
): { distributions: Float32Array; logProbs: Float32Array } {
  return noGrad(() =>
    tidy(() => {
      const { logits, packed } = completionLogits(model, items);
      return {
        distributions: logSoftmax(logits).takeData(),
        logProbs: gatherLogProbs(logits, packed.targets).logProbs.takeData(),
      };
    }),
  );
}

/**
 * The final hidden states (after the last norm) that predict each completion token,
 * [totalTokens, hidden] item by item: what the LM head turns into logits. A few kB per token,
 * against the 4·vocab bytes of a token's distribution.
 */
export function completionHiddenStates(
  model: TransformerLM,
  items: readonly ScoringItem[],
): Float32Array {
  const packed = packScoringBatch(items, model.config.maxPositions);
  return noGrad(() =>
    tidy(() => {
      const hidden = model.forwardHidden(forwardInput(packed));
      return selectRows(hidden, packed.rows).takeData();
    }),
  );
}

/** Log-distributions [rows, vocab] from final hidden states [rows, hidden] (the LM head alone). */
export function logDistributionsFromHidden(
  model: TransformerLM,
  hidden: Float32Array,
): Float32Array {
  const rows = hidden.length / model.config.hiddenSize;
  return noGrad(() =>
    tidy(() => {
      const logits = model.head(tensor(hidden, [rows, model.config.hiddenSize]));
      return logSoftmax(logits).takeData();
    }),
  );
}

/**
 * logDistributionsFromHidden, and from the same logits the fused gather's log-probability of
 * each target (one per row): what completionDistributionsAndLogProbs gives on the items whose
 * completion rows these hidden states are, bit for bit (the same head and row operations).
 */
export function logDistributionsAndLogProbsFromHidden(
  model: TransformerLM,
  hidden: Float32Array,
  targets: Int32Array,
): { distributions: Float32Array; logProbs: Float32Array } {
  return noGrad(() =>
    tidy(() => {
      const logits = model.head(tensor(hidden, [targets.length, model.config.hiddenSize]));
      return {
        distributions: logSoftmax(logits).takeData(),
        logProbs: gatherLogProbs(logits, targets).logProbs.takeData(),
      };
    }),
  );
}

/**
 * Whether the LM head (the output projection, or the token embedding it is tied to) is frozen:
 * then hidden states taken now give the same logits later, whatever else has trained.
 */
export function lmHeadIsFrozen(model: TransformerLM): boolean {
  const trainable = new Set(model.trainableParameters().map(({ tensor }) => tensor));
  const head = model.outputHead
    ? model.outputHead.namedParameters().map(({ tensor }) => tensor)
    : [model.tokenEmbedding];
  return !head.some((tensor) => trainable.has(tensor));
}
