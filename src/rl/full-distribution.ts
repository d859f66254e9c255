/**
 * The input every exact per-position divergence shares (kl.ts, total-variation.ts): the old and
 * the new policy's full distributions over the vocabulary, log-softmax'ed rows `[positions,
 * vocab]`, and the loop over positions.
 */
import { checkVocabularyRows, type NumberArray } from './layout.js';

/** The old and new log-probabilities over the whole vocabulary at a chunk of positions. */
export interface FullDistributionPair {
  /** [positions, vocab] log π_old. */
  oldLogProbsFull: NumberArray;
  /** [positions, vocab] log π_new. */
  newLogProbsFull: NumberArray;
  positions: number;
  vocab: number;
}

/** Throws ShapeError unless both rows of `pair` hold `positions × vocab` entries. */
export function checkFullDistributionPair(pair: FullDistributionPair, caller: string): void {
  checkVocabularyRows(
    [
      { name: 'oldLogProbsFull', values: pair.oldLogProbsFull },
      { name: 'newLogProbsFull', values: pair.newLogProbsFull },
    ],
    pair.positions,
    pair.vocab,
    caller,
  );
}

/**
 * The value of one position from its vocabulary row, entries `[start, end)` of both arrays of a
 * FullDistributionPair.
 */
export type VocabularyRowValue = (
  oldLogProbsFull: NumberArray,
  newLogProbsFull: NumberArray,
  start: number,
  end: number,
) => number;

/**
 * Checks the shapes, then returns `[positions]`: `valueOfRow` of each position's vocabulary row.
 * The loop over a row stays in each divergence's own `valueOfRow`, compiled on its own: one shared
 * per-entry callback would be called from one polymorphic site, measured ~30% slower once both
 * divergences run in a process.
 */
export function mapVocabularyRows(
  pair: FullDistributionPair,
  caller: string,
  valueOfRow: VocabularyRowValue,
): Float32Array {
  checkFullDistributionPair(pair, caller);
  const { oldLogProbsFull, newLogProbsFull, positions, vocab } = pair;
  const perPosition = new Float32Array(positions);
  for (let position = 0; position < positions; position++) {
    const start = position * vocab;
    perPosition[position] = valueOfRow(oldLogProbsFull, newLogProbsFull, start, start + vocab);
  }
  return perPosition;
}
