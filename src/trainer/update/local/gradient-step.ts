import { broadcastToTokens, type PolicyLoss } from '../../../rl/index.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { planStepPasses, runStepPasses, type StepPasses } from './step-passes.js';
import { fromGrid, toGrid, type UnitTokens } from '../token-grid.js';

export { activationBytes, microBatches } from './step-passes.js';

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
  /**
   * Whether a prompt several items begin with runs once (step-passes.ts; only on models that
   * sum in one order). False gives the plain passes, which tests compare with. @default true
   */
  sharePrefixes?: boolean;
}

/**
 * Forward, the objective's loss (pure, from src/rl), and its gradient injected into the graph.
 * A minibatch within the activation budget is one forward and backward pass. A larger one runs
 * in micro-batches (microBatchedStep), so that only one micro-batch's activations live at a
 * time while the parameters' gradient is the same sum. Either way a prompt that several items
 * begin with runs once, where the model sums in one order (step-passes.ts): the hidden states,
 * log-probs and loss are the plain passes' bit for bit, the gradient moves in its last bits.
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
  const passes = planStepPasses(model, tokens.items, budget, options.sharePrefixes ?? true);
  if (passes.groups.length > 1 || passes.groups[0]!.parts.length > 1)
    return microBatchedStep(model, tokens, passes, lossOf, options.afterForward);
  let result: { loss: number; clipFraction: number } | null = null;
  runStepPasses(model, tokens.items, passes, (_part, scores) => {
    if (options.afterForward?.({ hidden: scores.hidden }) === false) return null;
    const surrogate = lossOf(toGrid(tokens, scores.logProbs));
    result = { loss: surrogate.loss, clipFraction: surrogate.metrics.clipFraction };
    return fromGrid(tokens, surrogate.gradLogProbs);
  });
  return result;
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
 * gradient. The hidden states each forward pass produced are kept for `afterForward`, in the
 * minibatch's scoring order (micro-batches sharing a prompt run its items together).
 */
function microBatchedStep(
  model: TransformerLM,
  tokens: UnitTokens,
  passes: StepPasses,
  lossOf: LossOf,
  afterForward: GradientStepOptions['afterForward'],
): { loss: number; clipFraction: number } | null {
  const earlier = gradientCopies(model);
  const logProbs = Float32Array.from(tokens.oldLogProbs);
  const size = model.config.hiddenSize;
  const hidden = new Float32Array(tokens.totalTokens * size);
  const firstToken = [0];
  for (const item of tokens.items) firstToken.push(firstToken.at(-1)! + item.completion.length);
  /** Flat scoring positions of a part's tokens, item by item. */
  const positionsOf = (part: readonly number[]) =>
    part.flatMap((index) =>
      Array.from(
        { length: tokens.items[index]!.completion.length },
        (_, k) => firstToken[index]! + k,
      ),
    );
  const used: Array<{ positions: number[]; gradient: Float32Array }> = [];
  runStepPasses(model, tokens.items, passes, (part, scores) => {
    const positions = positionsOf(part);
    positions.forEach((position, offset) => {
      logProbs[tokens.gridIndex[position]!] = scores.logProbs[offset]!;
      hidden.set(scores.hidden.subarray(offset * size, (offset + 1) * size), position * size);
    });
    const gradient = fromGrid(tokens, lossOf(logProbs).gradLogProbs);
    used.push({
      positions,
      gradient: Float32Array.from(positions, (position) => gradient[position]!),
    });
    return used.at(-1)!.gradient;
  });
  if (afterForward?.({ hidden }) === false) {
    restoreGradients(model, earlier);
    return null;
  }
  const surrogate = lossOf(logProbs);
  const gradient = fromGrid(tokens, surrogate.gradLogProbs);
  const coupled = used.some(({ positions, gradient: seen }) =>
    positions.some((position, offset) => !Object.is(gradient[position], seen[offset])),
  );
  if (coupled) {
    restoreGradients(model, earlier);
    runStepPasses(model, tokens.items, passes, (part) =>
      Float32Array.from(positionsOf(part), (position) => gradient[position]!),
    );
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
