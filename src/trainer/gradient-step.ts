import { broadcastToTokens, type PolicyLoss } from '../rl/index.js';
import { scoreCompletions, scoreCompletionsKeepingHidden, type ScoringItem } from '../nn/score.js';
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
  /** @default activationBudgetBytes */
  budgetBytes?: number;
  /**
   * Sees the step's forward pass at the parameters it starts from before the step's gradient is
   * kept, so a caller that measures the same parameters can use its hidden states; returning
   * false abandons the step: gradientStep returns null and the parameters' gradients are as they
   * were before it. A step within the activation budget asks between its forward and backward
   * passes (a refused step never runs its backward). A step in micro-batches cannot hold its
   * graph that long (all of it would exceed the budget): it runs each micro-batch's backward
   * right after its forward and asks once all have run, undoing their gradients when refused.
   */
  afterForward?: (forward: StepForward) => boolean;
}

/**
 * Forward, the objective's loss (pure, from src/rl), and its gradient injected into the graph.
 * A minibatch within the activation budget is one forward and backward pass. A larger one runs
 * in micro-batches (microBatchedStep), so that only one micro-batch's activations live at a
 * time while the parameters' gradient is the same sum.
 */
export function gradientStep(
  model: TransformerLM,
  tokens: UnitTokens,
  rowAdvantages: Float64Array,
  policyLoss: PolicyLoss,
  options: GradientStepOptions = {},
): { loss: number; clipFraction: number } | null {
  const budget = options.budgetBytes ?? activationBudgetBytes;
  const advantages = broadcastToTokens({
    perTrajectory: rowAdvantages,
    mask: tokens.mask,
    rows: tokens.rows,
  });
  const lossOf = (logProbs: Float32Array) =>
    policyLoss({
      logProbs,
      oldLogProbs: tokens.oldLogProbs,
      advantages,
      mask: tokens.mask,
      rows: tokens.rows,
    });
  if (activationBytes(model, tokens.items) > budget)
    return microBatchedStep(model, tokens, lossOf, budget, options.afterForward);
  return tidy(() => {
    const scores = scoreCompletionsKeepingHidden(model, tokens.items);
    if (options.afterForward?.({ hidden: scores.hidden }) === false) return null;
    const surrogate = lossOf(toGrid(tokens, scores.logProbs.data));
    scores.logProbs.backward(fromGrid(tokens, surrogate.gradLogProbs));
    return { loss: surrogate.loss, clipFraction: surrogate.metrics.clipFraction };
  });
}

type LossOf = (logProbs: Float32Array) => ReturnType<PolicyLoss>;

/**
 * A gradient step in micro-batches, one forward pass each. The loss's gradient with respect to
 * a micro-batch's log-probs is needed right after its forward pass, before the later
 * micro-batches have run, so it is read from a grid holding the log-probs seen so far (the
 * others still at their sampled values). For the objectives of src/rl, whose gradient at a token
 * depends on that token's log-prob alone (the aggregation weights depend on the mask only), that
 * is already the final gradient; it is checked bit for bit against the gradient of the complete
 * grid, and a loss that couples micro-batches gets its micro-batches run again with the final
 * gradient. The hidden states each forward pass produced are kept for `afterForward`.
 */
function microBatchedStep(
  model: TransformerLM,
  tokens: UnitTokens,
  lossOf: LossOf,
  budget: number,
  afterForward: GradientStepOptions['afterForward'],
): { loss: number; clipFraction: number } | null {
  const parts = microBatches(model, tokens.items, budget);
  const earlier = gradientCopies(model);
  const logProbs = Float32Array.from(tokens.oldLogProbs);
  const flatIndex = tokens.gridIndex;
  const used: Float32Array[] = [];
  const hidden: Float32Array[] = [];
  for (const part of parts) {
    tidy(() => {
      const scores = scoreCompletionsKeepingHidden(model, part.items);
      hidden.push(scores.hidden);
      scores.logProbs.data.forEach((value, offset) => {
        logProbs[flatIndex[part.start + offset]!] = value;
      });
      const gradient = fromGrid(tokens, lossOf(logProbs).gradLogProbs);
      used.push(gradient.slice(part.start, part.start + part.positions));
      scores.logProbs.backward(used.at(-1)!);
    });
  }
  if (afterForward?.({ hidden: concatenate(hidden) }) === false) {
    restoreGradients(model, earlier);
    return null;
  }
  const surrogate = lossOf(logProbs);
  const gradient = fromGrid(tokens, surrogate.gradLogProbs);
  const coupled = parts.some((part, index) =>
    gradient
      .subarray(part.start, part.start + part.positions)
      .some((value, offset) => !Object.is(value, used[index]![offset])),
  );
  if (coupled) {
    restoreGradients(model, earlier);
    for (const part of parts) {
      tidy(() => {
        const scores = scoreCompletions(model, part.items);
        scores.logProbs.backward(gradient.slice(part.start, part.start + part.positions));
      });
    }
  }
  return { loss: surrogate.loss, clipFraction: surrogate.metrics.clipFraction };
}

/** The trainable parameters' accumulated gradients (null where none is allocated). */
function gradientCopies(model: TransformerLM): Array<Float32Array | null> {
  return model.trainableParameters().map(({ tensor }) => tensor.grad && tensor.grad.slice());
}

function restoreGradients(model: TransformerLM, copies: ReadonlyArray<Float32Array | null>): void {
  model.trainableParameters().forEach(({ tensor }, index) => {
    const copy = copies[index];
    if (copy) tensor.grad!.set(copy);
    else tensor.zeroGrad();
  });
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
