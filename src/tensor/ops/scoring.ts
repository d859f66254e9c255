import { getBackend } from '../../backend/index.js';
import { ShapeError } from '../../util/errors.js';
import { allocate, release } from '../memory.js';
import { createResult, formatShape, gradientOf, gradientToWrite, Tensor } from '../tensor.js';

export interface GatheredLogProbs {
  /** [rows]: log p(target | row). */
  logProbs: Tensor;
  /** [rows]: entropy of each row's distribution, when requested. */
  entropy: Tensor | null;
}

function validateTargets(logits: Tensor, targets: Int32Array): { rows: number; columns: number } {
  if (logits.rank < 1) throw new ShapeError('gatherLogProbs: logits must have a vocabulary axis');
  const columns = logits.shape[logits.rank - 1]!;
  const rows = columns === 0 ? 0 : logits.size / columns;
  if (targets.length !== rows) {
    throw new ShapeError(
      `gatherLogProbs: ${targets.length} targets for logits ${formatShape(logits.shape)} (${rows} rows)`,
    );
  }
  for (let row = 0; row < rows; row++) {
    const target = targets[row]!;
    if (target < 0 || target >= columns) {
      throw new ShapeError(
        `gatherLogProbs: target ${target} at row ${row} is outside the vocabulary [0, ${columns})`,
      );
    }
  }
  return { rows, columns };
}

/**
 * Fused log-softmax + gather: the log-probability of each row's target token, and optionally
 * each row's entropy, without materializing the [rows, vocab] log-probabilities. Both
 * outputs are differentiable with respect to the logits.
 */
export function gatherLogProbs(
  logits: Tensor,
  targets: Int32Array,
  options: { entropy?: boolean } = {},
): GatheredLogProbs {
  const { rows, columns } = validateTargets(logits, targets);
  const backend = getBackend();
  const logProbs = allocate(rows);
  const entropy = options.entropy ? allocate(rows) : null;
  const logSumExp = allocate(rows);
  backend.gatherLogProbs({
    logits: logits.data,
    targets,
    rows,
    columns,
    logProbs,
    entropy,
    logSumExp,
  });
  // logSumExp is saved for both outputs' backward rules; freed when the last owner lets go.
  let owners = entropy ? 2 : 1;
  const releaseSaved = (): void => {
    owners--;
    if (owners === 0) release(logSumExp);
  };
  const backward = (gradLogProbs: Float32Array, gradEntropy: Float32Array | null): void => {
    const { gradient, beta } = gradientToWrite(logits);
    backend.gatherLogProbsBackward({
      logits: logits.data,
      targets,
      rows,
      columns,
      logSumExp,
      gradLogProbs,
      gradEntropy,
      gradLogits: gradient,
      beta,
    });
  };
  const logProbTensor = createResult(
    logProbs,
    [rows],
    'gatherLogProbs',
    [logits],
    (gradient) => backward(gradient, null),
    releaseSaved,
  );
  const entropyTensor = entropy
    ? createResult(
        entropy,
        [rows],
        'gatherEntropy',
        [logits],
        (gradient) => backward(new Float32Array(rows), gradient),
        releaseSaved,
      )
    : null;
  return { logProbs: logProbTensor, entropy: entropyTensor };
}

/**
 * Mean cross-entropy of the targets, over rows whose weight is non-zero (weights default to
 * 1; a weight of 0 masks a padding row). Returns a scalar.
 */
export function crossEntropy(logits: Tensor, targets: Int32Array, weights?: Float32Array): Tensor {
  const { logProbs } = gatherLogProbs(logits, targets);
  const rows = targets.length;
  let totalWeight = 0;
  for (let row = 0; row < rows; row++) totalWeight += weights ? weights[row]! : 1;
  const normalizer = totalWeight > 0 ? 1 / totalWeight : 0;
  const values = logProbs.data;
  let total = 0;
  for (let row = 0; row < rows; row++) total -= (weights ? weights[row]! : 1) * values[row]!;
  const output = allocate(1);
  output[0] = total * normalizer;
  return createResult(output, [], 'crossEntropy', [logProbs], (gradOutput) => {
    const gradient = gradientOf(logProbs);
    const upstream = gradOutput[0]!;
    for (let row = 0; row < rows; row++)
      gradient[row]! -= upstream * normalizer * (weights ? weights[row]! : 1);
  });
}
