/**
 * Probability shift by pre-update rank (docs/method.md §5): how an update moved probability mass
 * between the tokens the old policy ranked first, second, …, for the paper's "logit shifts by
 * rank" figure. An in-region update should nudge the top ranks; an out-of-region one often
 * collapses mass onto rank 1.
 */
import { ShapeError, TeamtrError } from '../util/errors.js';
import type { NumberArray } from './layout.js';

export interface RankBucketShift {
  /** Ranks lowestRank..highestRank inclusive (rank 1 = most likely under the old policy). */
  lowestRank: number;
  highestRank: number;
  /** Mean of p_new − p_old over every (position, token) in the bucket; NaN if empty. */
  meanShift: number;
  /** Σ over the bucket's tokens of p_new − p_old, averaged over positions: the mass it gained. */
  massShiftPerPosition: number;
  meanOldProbability: number;
  meanNewProbability: number;
  /** (position, token) pairs counted. */
  tokenCount: number;
}

/**
 * Ranks each position's vocabulary by OLD probability (descending; ties broken by the lower
 * token id) and averages the change in probability per rank bucket. `rankBuckets` are ascending
 * inclusive upper bounds: [1, 2, 5, 10, Infinity] gives buckets {1}, {2}, {3..5}, {6..10},
 * {11..vocab}; ranks beyond the last bound are not counted; bounds past `vocab` are clamped to it.
 *
 * Only the top K ranks need to be told apart, K = the largest bound below vocab, so they are
 * selected with a size-K heap in O(vocab·log K) per position; everything ranked below K falls in
 * one bucket and is accounted for from the position's totals.
 */
export function probabilityShiftByRank({
  oldProbsFull,
  newProbsFull,
  positions,
  vocab,
  rankBuckets,
}: {
  /** [positions, vocab] π_old(·|prefix). */
  oldProbsFull: NumberArray;
  /** [positions, vocab] π_new(·|prefix). */
  newProbsFull: NumberArray;
  positions: number;
  vocab: number;
  rankBuckets: readonly number[];
}): RankBucketShift[] {
  const accumulator = new RankShiftAccumulator(vocab, rankBuckets);
  accumulator.add({ oldProbsFull, newProbsFull, positions });
  return accumulator.result();
}

/**
 * probabilityShiftByRank over positions that arrive in chunks (full distributions of a real
 * vocabulary do not fit in memory for a whole batch at once). The bucket sums run position by
 * position in arrival order, so any chunking gives exactly the numbers of one call.
 */
export class RankShiftAccumulator {
  private readonly bounds: number[];
  private readonly topCount: number;
  /** rank → bucket, for ranks 1..topCount */
  private readonly bucketOfRank: Int32Array;
  private readonly tailBucket: number;
  private readonly sums: Array<{ old: number; new: number; count: number }>;
  private positions = 0;

  constructor(
    private readonly vocab: number,
    rankBuckets: readonly number[],
  ) {
    const bounds = clampedBounds(rankBuckets, vocab);
    this.bounds = bounds;
    this.topCount = bounds.filter((bound) => bound < vocab).reduce((a, b) => Math.max(a, b), 0);
    this.bucketOfRank = new Int32Array(this.topCount + 1);
    for (let rank = 1, bucket = 0; rank <= this.topCount; rank++) {
      while (rank > bounds[bucket]) bucket++;
      this.bucketOfRank[rank] = bucket;
    }
    this.tailBucket = bounds[bounds.length - 1] === vocab ? bounds.indexOf(vocab) : -1;
    this.sums = bounds.map(() => ({ old: 0, new: 0, count: 0 }));
  }

  /** How many top ranks are told apart per position: the largest rank bound below vocab. */
  get rankedCount(): number {
    return this.topCount;
  }

  /** Adds `positions` more rows [positions, vocab] of π_old and π_new. */
  add({
    oldProbsFull,
    newProbsFull,
    positions,
  }: {
    oldProbsFull: NumberArray;
    newProbsFull: NumberArray;
    positions: number;
  }): void {
    const { vocab, topCount, tailBucket } = this;
    if (oldProbsFull.length !== positions * vocab || newProbsFull.length !== positions * vocab) {
      throw new ShapeError(
        `probabilityShiftByRank: expected [positions, vocab] = ${positions} × ${vocab} values, got ` +
          `${oldProbsFull.length} (old) and ${newProbsFull.length} (new)`,
      );
    }
    for (let position = 0; position < positions; position++) {
      const offset = position * vocab;
      const top = topTokens(oldProbsFull, offset, vocab, topCount);
      let topOld = 0;
      let topNew = 0;
      for (let rank = 1; rank <= top.length; rank++) {
        const token = offset + top[rank - 1];
        this.addRank(rank, oldProbsFull[token], newProbsFull[token]);
        topOld += oldProbsFull[token];
        topNew += newProbsFull[token];
      }
      if (tailBucket >= 0) {
        let totalOld = 0;
        let totalNew = 0;
        for (let token = offset; token < offset + vocab; token++) {
          totalOld += oldProbsFull[token];
          totalNew += newProbsFull[token];
        }
        this.addTail(totalOld - topOld, totalNew - topNew, vocab - top.length);
      }
    }
    this.positions += positions;
  }

  /**
   * Adds `positions` more rows ranked elsewhere (a kernel that reads each row once): per
   * position, π_old and π_new of its `rankedCount` most likely tokens under π_old, best first
   * (ties to the lower id), and both distributions' totals over the whole vocabulary. The
   * buckets get exactly what `add` gives them from the full rows.
   */
  addRanked({
    topOldProbabilities,
    topNewProbabilities,
    oldTotals,
    newTotals,
    positions,
  }: {
    /** [positions, rankedCount] π_old of each position's top tokens, best first. */
    topOldProbabilities: NumberArray;
    /** [positions, rankedCount] π_new of the same tokens. */
    topNewProbabilities: NumberArray;
    /** [positions] Σ_v π_old(v). */
    oldTotals: NumberArray;
    /** [positions] Σ_v π_new(v). */
    newTotals: NumberArray;
    positions: number;
  }): void {
    const { vocab, topCount } = this;
    if (
      topOldProbabilities.length !== positions * topCount ||
      topNewProbabilities.length !== positions * topCount ||
      oldTotals.length !== positions ||
      newTotals.length !== positions
    ) {
      throw new ShapeError(
        `probabilityShiftByRank: expected [positions, rankedCount] = ${positions} × ${topCount} ` +
          `top probabilities and ${positions} totals, got ${topOldProbabilities.length} (old), ` +
          `${topNewProbabilities.length} (new), ${oldTotals.length} and ${newTotals.length} totals`,
      );
    }
    for (let position = 0; position < positions; position++) {
      let topOld = 0;
      let topNew = 0;
      for (let rank = 1; rank <= topCount; rank++) {
        const index = position * topCount + rank - 1;
        this.addRank(rank, topOldProbabilities[index], topNewProbabilities[index]);
        topOld += topOldProbabilities[index];
        topNew += topNewProbabilities[index];
      }
      this.addTail(oldTotals[position] - topOld, newTotals[position] - topNew, vocab - topCount);
    }
    this.positions += positions;
  }

  private addRank(rank: number, oldProbability: number, newProbability: number): void {
    const entry = this.sums[this.bucketOfRank[rank]];
    entry.old += oldProbability;
    entry.new += newProbability;
    entry.count++;
  }

  /** The tokens ranked below `rankedCount`, when a bucket counts them. */
  private addTail(oldMass: number, newMass: number, count: number): void {
    if (this.tailBucket < 0) return;
    const entry = this.sums[this.tailBucket];
    entry.old += oldMass;
    entry.new += newMass;
    entry.count += count;
  }

  /** The buckets over every position added so far. */
  result(): RankBucketShift[] {
    const { bounds, sums, positions } = this;
    return bounds.map((bound, bucket) => {
      const { old, new: updated, count } = sums[bucket];
      return {
        lowestRank: bucket === 0 ? 1 : bounds[bucket - 1] + 1,
        highestRank: bound,
        meanShift: count > 0 ? (updated - old) / count : Number.NaN,
        massShiftPerPosition: positions > 0 ? (updated - old) / positions : Number.NaN,
        meanOldProbability: count > 0 ? old / count : Number.NaN,
        meanNewProbability: count > 0 ? updated / count : Number.NaN,
        tokenCount: count,
      };
    });
  }
}

function clampedBounds(rankBuckets: readonly number[], vocab: number): number[] {
  if (rankBuckets.length === 0) {
    throw new TeamtrError(
      'probabilityShiftByRank: rankBuckets is empty; try [1, 2, 5, 10, Infinity]',
    );
  }
  const bounds: number[] = [];
  let previous = 0;
  for (const bound of rankBuckets) {
    if (!(bound > previous) || (!Number.isInteger(bound) && bound !== Infinity)) {
      throw new TeamtrError(
        `probabilityShiftByRank: rankBuckets must be strictly increasing positive integers ` +
          `(Infinity allowed last), got [${rankBuckets.join(', ')}]`,
      );
    }
    previous = bound;
    if (bounds.length === 0 || bounds[bounds.length - 1] < vocab)
      bounds.push(Math.min(bound, vocab));
  }
  return bounds;
}

/**
 * Token ids (relative to `offset`) of the `count` most likely tokens, best first; ties go to the
 * lower id. A min-heap of size `count` keyed by "worse" (lower probability, then higher id) keeps
 * the current best `count`.
 */
function topTokens(
  probabilities: NumberArray,
  offset: number,
  vocab: number,
  count: number,
): number[] {
  const worse = (a: number, b: number) => {
    const difference = probabilities[offset + a] - probabilities[offset + b];
    return difference < 0 || (difference === 0 && a > b);
  };
  const heap: number[] = [];
  const siftDown = (start: number) => {
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && worse(heap[left], heap[smallest])) smallest = left;
      if (right < heap.length && worse(heap[right], heap[smallest])) smallest = right;
      if (smallest === index) return;
      [heap[index], heap[smallest]] = [heap[smallest], heap[index]];
      index = smallest;
    }
  };
  for (let token = 0; token < vocab && count > 0; token++) {
    if (heap.length < count) {
      heap.push(token);
      for (let index = heap.length - 1; index > 0;) {
        const parent = (index - 1) >> 1;
        if (!worse(heap[index], heap[parent])) break;
        [heap[index], heap[parent]] = [heap[parent], heap[index]];
        index = parent;
      }
    } else if (worse(heap[0], token)) {
      heap[0] = token;
      siftDown(0);
    }
  }
  return heap.sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
}
