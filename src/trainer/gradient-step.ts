import { broadcastToTokens, type PolicyLoss } from '../rl/index.js';
import {
  scoreCompletions,
  scoreCompletionsKeepingHidden,
  scoreToArrays,
  type ScoringItem,
} from '../nn/score.js';
import type { TransformerLM } from '../nn/transformer.js';
import { tidy } from '../tensor/index.js';
import { fromGrid, toGrid, type UnitTokens } from './token-grid.js';

/**
 * Bytes a gradient step may keep for its backward pass (every layer's saved activations and
 * the logits of the LM head); a minibatch whose estimate exceeds it runs in micro-batches.
 */
export const activationBudgetBytes = 512 * 1024 ** 2;

/** What a gradient step's own forward pass computed at the parameters it starts from. */
export interface StepForward {
  /** [positions, hidden] final hidden states of the minibatch's tokens, in its scoring order. */
  hidden: Float32Array;
}

export interface GradientStepOptions {
  /**
   * The minibatch's [rows·length] log-probs at the current parameters when the caller has them
   * at hand (read only by a step in micro-batches); else a pass without gradients.
   */
  currentLogProbs?: () => Float32Array | null;
  /** @default activationBudgetBytes */
  budgetBytes?: number;
  /**
   * Called once before any gradient flows: with the step's forward pass when it ran whole (its
   * graph is still held, so a caller that measures the same parameters can use its hidden
   * states), with null when the step runs in micro-batches (nothing run yet). Returning false
   * abandons the step: no gradient is accumulated and gradientStep returns null.
   */
  beforeBackward?: (forward: StepForward | null) => boolean;
}

/**
 * Forward, the objective's loss (pure, from src/rl), and its gradient injected into the graph.
 * A minibatch within the activation budget is one forward and backward pass (what the update
 * always did). A larger one is split: the loss and its gradient with respect to the
 * log-probabilities come from the log-probs at the current parameters (`currentLogProbs`: the
 * minibatch's [rows·length] grid when the caller has them at hand, else a pass without
 * gradients), then each micro-batch runs forward and backward with its slice of that gradient,
 * so the parameters' gradient is the same sum while only one micro-batch's activations live.
 * Such a step cannot hold its graph for `beforeBackward`: all of it would exceed the budget.
 */
export function gradientStep(
  model: TransformerLM,
  tokens: UnitTokens,
  rowAdvantages: Float64Array,
  policyLoss: PolicyLoss,
  options: GradientStepOptions = {},
): { loss: number; clipFraction: number } | null {
  const budget = options.budgetBytes ?? activationBudgetBytes;
  const lossOf = (logProbs: Float32Array) =>
    policyLoss({
      logProbs,
      oldLogProbs: tokens.oldLogProbs,
      advantages: broadcastToTokens({
        perTrajectory: rowAdvantages,
        mask: tokens.mask,
        rows: tokens.rows,
      }),
      mask: tokens.mask,
      rows: tokens.rows,
    });
  if (activationBytes(model, tokens.items) <= budget) {
    return tidy(() => {
      const scores = scoreCompletionsKeepingHidden(model, tokens.items);
      if (options.beforeBackward?.({ hidden: scores.hidden }) === false) return null;
      const surrogate = lossOf(toGrid(tokens, scores.logProbs.data));
      scores.logProbs.backward(fromGrid(tokens, surrogate.gradLogProbs));
      return { loss: surrogate.loss, clipFraction: surrogate.metrics.clipFraction };
    });
  }
  if (options.beforeBackward?.(null) === false) return null;
  const parts = microBatches(model, tokens.items, budget);
  const logProbs =
    options.currentLogProbs?.() ??
    toGrid(
      tokens,
      concatenate(
        parts.flatMap((part) => scoreToArrays(model, part.items).map((score) => score.logProbs)),
      ),
    );
  const surrogate = lossOf(logProbs);
  const gradient = fromGrid(tokens, surrogate.gradLogProbs);
  for (const part of parts) {
    tidy(() => {
      const scores = scoreCompletions(model, part.items);
      scores.logProbs.backward(gradient.slice(part.start, part.start + part.positions));
    });
  }
  return { loss: surrogate.loss, clipFraction: surrogate.metrics.clipFraction };
}

/**
 * Bytes a forward pass with gradients keeps for the backward pass on `items` packed into one
 * batch, estimated per position and layer: about a dozen hidden-size vectors (norms,
 * projections, residuals), four intermediate-size ones (gate, up, their product) and two rows
 * of attention weights per head; plus logits and their gradient at the completion positions.
 */
export function activationBytes(model: TransformerLM, items: readonly ScoringItem[]): number {
  const { hiddenSize, intermediateSize, heads, layers, vocabSize } = model.config;
  const length = Math.max(1, ...items.map((item) => item.context.length + item.completion.length));
  const perPosition = 12 * hiddenSize + 4 * intermediateSize + 2 * heads * length;
  const completions = items.reduce((total, item) => total + item.completion.length, 0);
  return 4 * (items.length * length * layers * perPosition + 2 * completions * vocabSize);
}

/** Consecutive items whose activations fit `budget` (an item that does not fit is its own). */
export function microBatches(
  model: TransformerLM,
  items: readonly ScoringItem[],
  budget: number,
): Array<{ items: ScoringItem[]; start: number; positions: number }> {
  const parts: Array<{ items: ScoringItem[]; start: number; positions: number }> = [];
  let current = { items: [] as ScoringItem[], start: 0, positions: 0 };
  for (const item of items) {
    if (current.items.length > 0 && activationBytes(model, [...current.items, item]) > budget) {
      parts.push(current);
      current = { items: [], start: current.start + current.positions, positions: 0 };
    }
    current.items.push(item);
    current.positions += item.completion.length;
  }
  if (current.items.length > 0) parts.push(current);
  return parts;
}

function concatenate(arrays: readonly Float32Array[]): Float32Array {
  const result = new Float32Array(arrays.reduce((total, array) => total + array.length, 0));
  let offset = 0;
  for (const array of arrays) {
    result.set(array, offset);
    offset += array.length;
  }
  return result;
}
