import type { KernelArguments } from '../types.js';

/**
 * compareLogDistributions in plain JavaScript: per row, the terms of src/rl/kl.ts's tokenKl and
 * src/rl/total-variation.ts's tokenTotalVariation written the same way (Math.exp, Math.expm1,
 * float64 sums in index order), the row totals, and the top tokens by a sorted insertion.
 * The kernel layer may not import src/rl, so the formulas are restated here; the trainer's
 * tests check them against src/rl's functions.
 */
export function compareLogDistributions({
  oldLogProbs,
  newLogProbs,
  rows,
  columns,
  kl,
  totalVariation,
  topCount,
  topTokens,
  oldTotal,
  newTotal,
}: KernelArguments<'compareLogDistributions'>): void {
  for (let row = 0; row < rows; row++) {
    const start = row * columns;
    let klSum = 0;
    let variationSum = 0;
    let oldSum = 0;
    let newSum = 0;
    for (let index = start; index < start + columns; index++) {
      const oldLogProb = oldLogProbs[index]!;
      const newLogProb = newLogProbs[index]!;
      const oldProbability = Math.exp(oldLogProb);
      const newProbability = Math.exp(newLogProb);
      klSum += klTerm(oldLogProb, newLogProb, oldProbability, newProbability);
      const larger = Math.max(oldLogProb, newLogProb);
      if (larger !== -Infinity)
        variationSum += -Math.exp(larger) * Math.expm1(-Math.abs(oldLogProb - newLogProb));
      oldSum += oldProbability;
      newSum += newProbability;
    }
    kl[row] = klSum;
    totalVariation[row] = Math.min(1, Math.max(0, variationSum / 2));
    oldTotal[row] = oldSum;
    newTotal[row] = newSum;
    writeTopTokens(
      oldLogProbs,
      start,
      columns,
      topTokens.subarray(row * topCount, (row + 1) * topCount),
    );
  }
}

/**
 * p·(d + expm1(−d)) for d = log p − log q ≥ −1; below, the split form p·(d − 1) + q, where e^(−d)
 * could overflow while p underflows (kl.ts says why both are exact and non-negative).
 */
function klTerm(
  oldLogProb: number,
  newLogProb: number,
  oldProbability: number,
  newProbability: number,
): number {
  if (oldLogProb === -Infinity) return newProbability;
  const difference = oldLogProb - newLogProb;
  return difference >= -1
    ? oldProbability * (difference + Math.expm1(-difference))
    : oldProbability * (difference - 1) + newProbability;
}

/**
 * The ids of the row's largest log-probabilities, best first, ties to the lower id, into
 * `target` (its length is the count); NaN entries are skipped and unfilled places get −1.
 * A kept list in rank order with insertion: the reference needs to be plainly right, not fast.
 */
function writeTopTokens(
  logProbs: Float32Array,
  start: number,
  columns: number,
  target: Int32Array,
): void {
  const kept: number[] = [];
  for (let token = 0; token < columns && target.length > 0; token++) {
    const value = logProbs[start + token]!;
    if (Number.isNaN(value)) continue;
    if (kept.length === target.length && !(value > logProbs[start + kept[kept.length - 1]!]!))
      continue;
    // Scanning ids upwards, an equal value ranks after every kept one: insert after them.
    let place = kept.length;
    while (place > 0 && value > logProbs[start + kept[place - 1]!]!) place--;
    kept.splice(place, 0, token);
    if (kept.length > target.length) kept.pop();
  }
  target.fill(-1);
  target.set(kept);
}
