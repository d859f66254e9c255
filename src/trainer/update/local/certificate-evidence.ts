import { RankShiftAccumulator, type RankBucketShift } from '../../../rl/index.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import {
  compareLogDistributions,
  type LogDistributionComparison,
} from '../../../tensor/distribution-comparison.js';
import type { TeamBatch } from '../../../team/types.js';
import { ReferenceDistributions, type DistributionPair } from './reference-distributions.js';
import type { CertificateEvidence } from '../engine.js';
import { collectUnitTokens, toGrid, type UnitTokens } from '../token-grid.js';

/** Pre-update rank buckets of the "probability shift by rank" diagnostic (docs/method.md §5). */
export const rankBuckets = [1, 2, 3, 5, 10, Infinity];

/**
 * The evidence, gathered chunk by chunk from pairs of full log-distributions (π_old, π_new):
 * every quantity is per position, so the chunks only bound memory and change no number.
 * With `rankShift`, also the probability shift by pre-update rank.
 */
export class EvidenceCollector {
  private readonly newLogProbs: Float32Array;
  private readonly perTokenKl: Float32Array;
  private readonly perTokenTotalVariation: Float32Array;
  private readonly fusedLogProbs: Float32Array;
  private readonly rankShift: RankShiftAccumulator | null;

  constructor(
    private readonly tokens: UnitTokens,
    private readonly vocab: number,
    options: { rankShift?: boolean } = {},
  ) {
    this.newLogProbs = new Float32Array(tokens.totalTokens);
    this.perTokenKl = new Float32Array(tokens.totalTokens);
    this.perTokenTotalVariation = new Float32Array(tokens.totalTokens);
    this.fusedLogProbs = new Float32Array(tokens.totalTokens);
    this.rankShift = options.rankShift ? new RankShiftAccumulator(vocab, rankBuckets) : null;
  }

  /**
   * One chunk's pair of full log-distributions. KL, TV and the rank shift's ranks and totals
   * come from one kernel pass over both arrays (compareLogDistributions, the formulas of
   * src/rl's tokenKl and tokenTotalVariation), not from exp'ed copies of them: at a real
   * vocabulary that JavaScript path was the largest cost of an update after the forward passes.
   * Ranks are by log π_old, the order of π_old itself; RankShiftAccumulator.add ranks
   * float32-rounded probabilities, which may tie (and so order by id) two log-probabilities
   * above −1 that differ in their last bits: the one place the two paths can rank differently.
   */
  add({ chunk, old, current, currentLogProbs }: DistributionPair): void {
    const { vocab, rankShift } = this;
    this.fusedLogProbs.set(currentLogProbs, chunk.start);
    const comparison = compareLogDistributions({
      oldLogProbs: old,
      newLogProbs: current,
      positions: chunk.positions,
      vocab,
      topCount: rankShift ? rankShift.rankedCount : 0,
    });
    this.perTokenKl.set(comparison.kl, chunk.start);
    this.perTokenTotalVariation.set(comparison.totalVariation, chunk.start);
    let cursor = 0;
    for (const item of chunk.items) {
      for (const token of item.completion) {
        this.newLogProbs[chunk.start + cursor] = current[cursor * vocab + token]!;
        cursor++;
      }
    }
    if (rankShift) rankShift.addRanked(rankedProbabilities(comparison, old, current, vocab));
  }

  evidence(): CertificateEvidence {
    const { tokens } = this;
    return {
      tokens,
      newLogProbs: toGrid(tokens, this.newLogProbs),
      perTokenKl: toGrid(tokens, this.perTokenKl),
      perTokenTotalVariation: toGrid(tokens, this.perTokenTotalVariation),
    };
  }

  /**
   * log π_new of each token in scoring order from the fused gather (what scoreToArrays gives on
   * the same items), beside `newLogProbs` read from the log-softmax.
   */
  scoredLogProbs(): Float32Array {
    return this.fusedLogProbs;
  }

  /** The probability shift by rank (empty without positions or without `rankShift`). */
  probabilityShiftByRank(): RankBucketShift[] {
    return this.rankShift && this.tokens.totalTokens > 0 ? this.rankShift.result() : [];
  }
}

/**
 * π_old and π_new of each position's top tokens (a token id of −1, a row with fewer ranked
 * entries, reads NaN) and the totals, as RankShiftAccumulator.addRanked takes them.
 */
function rankedProbabilities(
  { topTokens, oldTotals, newTotals }: LogDistributionComparison,
  old: Float32Array,
  current: Float32Array,
  vocab: number,
): Parameters<RankShiftAccumulator['addRanked']>[0] {
  const positions = oldTotals.length;
  const topCount = positions > 0 ? topTokens.length / positions : 0;
  const topOldProbabilities = new Float64Array(topTokens.length);
  const topNewProbabilities = new Float64Array(topTokens.length);
  for (let index = 0; index < topTokens.length; index++) {
    const token = topTokens[index]!;
    const entry = Math.floor(index / topCount) * vocab + token;
    topOldProbabilities[index] = token < 0 ? Number.NaN : Math.exp(old[entry]!);
    topNewProbabilities[index] = token < 0 ? Number.NaN : Math.exp(current[entry]!);
  }
  return { topOldProbabilities, topNewProbabilities, oldTotals, newTotals, positions };
}

/**
 * Evidence on a batch the update never saw (the stage's held-out prompts, sampled by the team
 * before the update): π_old is fixed at construction, π_new read by `after()`.
 * A certificate from the batch an update was fitted to reads its surrogate high (the update
 * maximized it on those very samples); on this batch the surrogate is an unbiased estimate.
 */
export class HeldOutEvidence {
  private readonly tokens: UnitTokens;
  private readonly reference: ReferenceDistributions;

  constructor(
    private readonly model: TransformerLM,
    readonly batch: TeamBatch,
    agentIndices: readonly number[],
  ) {
    this.tokens = collectUnitTokens(batch, agentIndices);
    this.reference = new ReferenceDistributions(model, this.tokens.items);
  }

  after(): CertificateEvidence {
    const collector = new EvidenceCollector(this.tokens, this.model.config.vocabSize);
    for (const pair of this.reference.pairs()) {
      collector.add(pair);
      pair.release();
    }
    return collector.evidence();
  }
}
