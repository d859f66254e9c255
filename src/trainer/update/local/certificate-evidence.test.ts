import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ScoringItem } from '../../../nn/score.js';
import {
  probabilityShiftByRank,
  tokenKl,
  tokenTotalVariation,
  type RankBucketShift,
} from '../../../rl/index.js';
import { forEachBackend } from '../../../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../../../util/random.js';
import { EvidenceCollector, rankBuckets } from './certificate-evidence.js';
import type { DistributionPair } from './reference-distributions.js';
import type { UnitTokens } from '../token-grid.js';

const vocab = 37;
const completionLengths = [4, 5, 3];
const positions = completionLengths.reduce((a, b) => a + b, 0);

/** One row of three turns; the grid is the flat scoring order. */
function unitTokens(): UnitTokens {
  const items: ScoringItem[] = completionLengths.map((length, turn) => ({
    context: [1, 2, turn],
    completion: Array.from({ length }, (_, index) => (7 * turn + 3 * index) % vocab),
  }));
  return {
    rows: 1,
    length: positions,
    rowTrajectories: [0],
    mask: new Float32Array(positions).fill(1),
    oldLogProbs: new Float32Array(positions),
    items,
    sampledHidden: items.map(() => null),
    gridIndex: Int32Array.from({ length: positions }, (_, index) => index),
    totalTokens: positions,
  };
}

/**
 * log π_old and log π_new [positions, vocab]: log-softmax'ed normal logits, π_new nudged from
 * π_old, and a few tokens impossible under both (−∞), as a masked vocabulary gives.
 */
function distributions(seed: number): { old: Float32Array; current: Float32Array } {
  const random = new RandomGenerator(seed);
  const logSoftmax = (logits: number[]) => {
    const result = new Float32Array(logits.length);
    for (let position = 0; position < positions; position++) {
      const row = logits.slice(position * vocab, (position + 1) * vocab);
      const maximum = Math.max(...row);
      const logSum = maximum + Math.log(row.reduce((sum, x) => sum + Math.exp(x - maximum), 0));
      row.forEach((x, token) => (result[position * vocab + token] = x - logSum));
    }
    return result;
  };
  const masked = (index: number) => index % vocab === 11 || index % vocab === 30;
  const oldLogits = Array.from({ length: positions * vocab }, (_, index) =>
    masked(index) ? -Infinity : random.normal() * 2,
  );
  const newLogits = oldLogits.map((x) => x + random.normal() * 0.2);
  return { old: logSoftmax(oldLogits), current: logSoftmax(newLogits) };
}

/** The collector fed in two chunks: the first two turns, then the third. */
function collect(old: Float32Array, current: Float32Array): EvidenceCollector {
  const tokens = unitTokens();
  const collector = new EvidenceCollector(tokens, vocab, { rankShift: true });
  const split = completionLengths[0]! + completionLengths[1]!;
  const chunks = [
    { items: tokens.items.slice(0, 2), start: 0, positions: split },
    { items: tokens.items.slice(2), start: split, positions: positions - split },
  ];
  for (const chunk of chunks) {
    const rows = (values: Float32Array) =>
      values.slice(chunk.start * vocab, (chunk.start + chunk.positions) * vocab);
    const pair: DistributionPair = {
      chunk,
      old: rows(old),
      current: rows(current),
      currentLogProbs: new Float32Array(chunk.positions),
      release: () => {},
    };
    collector.add(pair);
  }
  return collector;
}

/** What src/rl's pure functions give on the same rows: the definitions the collector must meet. */
function reference(old: Float32Array, current: Float32Array) {
  const pair = { oldLogProbsFull: old, newLogProbsFull: current, positions, vocab };
  return {
    kl: tokenKl(pair),
    totalVariation: tokenTotalVariation(pair),
    rankShift: probabilityShiftByRank({
      oldProbsFull: old.map(Math.exp),
      newProbsFull: current.map(Math.exp),
      positions,
      vocab,
      rankBuckets,
    }),
  };
}

/**
 * Where the collector and the reference differ by more than float32 rounding: relative 1e-6
 * for KL, TV and the mean probabilities (sums of like-signed terms), and for the shifts, which
 * are differences, 1e-6 of the probabilities they are the difference of.
 */
function mismatches(
  collector: EvidenceCollector,
  expected: ReturnType<typeof reference>,
): string[] {
  const found: string[] = [];
  const check = (label: string, actual: number, wanted: number, scale = Math.abs(wanted)) => {
    if (!(Math.abs(actual - wanted) <= 1e-6 * scale))
      found.push(`${label}: ${actual} vs ${wanted}`);
  };
  const evidence = collector.evidence();
  for (let position = 0; position < positions; position++) {
    check(`kl[${position}]`, evidence.perTokenKl[position]!, expected.kl[position]!);
    check(
      `totalVariation[${position}]`,
      evidence.perTokenTotalVariation[position]!,
      expected.totalVariation[position]!,
    );
  }
  const buckets = collector.probabilityShiftByRank();
  assert.equal(buckets.length, expected.rankShift.length);
  expected.rankShift.forEach((wanted: RankBucketShift, bucket) => {
    const actual = buckets[bucket]!;
    const label = `rank bucket ${bucket}`;
    if (actual.tokenCount !== wanted.tokenCount) found.push(`${label}: tokenCount`);
    check(`${label} meanOldProbability`, actual.meanOldProbability, wanted.meanOldProbability);
    check(`${label} meanNewProbability`, actual.meanNewProbability, wanted.meanNewProbability);
    const probabilities = wanted.meanOldProbability + wanted.meanNewProbability;
    check(`${label} meanShift`, actual.meanShift, wanted.meanShift, probabilities);
    check(
      `${label} massShiftPerPosition`,
      actual.massShiftPerPosition,
      wanted.massShiftPerPosition,
      (probabilities * wanted.tokenCount) / positions,
    );
  });
  return found;
}

describe('EvidenceCollector', () => {
  test('KL, TV and the rank shift equal those of src/rl within float32 rounding', () => {
    forEachBackend((backend) => {
      for (const seed of [1, 2, 3]) {
        const { old, current } = distributions(seed);
        const collector = collect(old, current);
        assert.deepEqual(mismatches(collector, reference(old, current)), [], `${backend}, ${seed}`);
        assert.equal(collector.probabilityShiftByRank()[0]!.tokenCount, positions);
      }
    });
  });

  test('the comparison catches a change of 1e-4 in one log-probability of π_new', () => {
    forEachBackend((backend) => {
      const { old, current } = distributions(4);
      // Position 6's most likely token under π_old: it moves rank 1's bucket as well.
      const position = 6;
      const row = Array.from(old.subarray(position * vocab, (position + 1) * vocab));
      const top = row.indexOf(Math.max(...row));
      const changed = current.slice();
      changed[position * vocab + top]! += 1e-4;
      const found = mismatches(collect(old, changed), reference(old, current));
      assert.ok(
        found.some((entry) => entry.startsWith('kl[6]')),
        backend,
      );
      assert.ok(
        found.some((entry) => entry.startsWith('totalVariation[6]')),
        backend,
      );
      assert.ok(
        found.some((entry) => entry.startsWith('rank bucket 0 meanNew')),
        backend,
      );
      assert.ok(!found.some((entry) => /\[(?!6\])\d+\]/.test(entry)), `${backend}: ${found}`);
    });
  });
});
