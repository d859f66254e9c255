import {
  RankShiftAccumulator,
  tokenKl,
  tokenTotalVariation,
  type RankBucketShift,
} from '../rl/index.js';
import type { TransformerLM } from '../nn/transformer.js';
import type { TeamBatch } from '../team/types.js';
import { ReferenceDistributions, type DistributionPair } from './reference-distributions.js';
import { collectUnitTokens, toGrid, type UnitTokens } from './token-grid.js';

/**
 * What a certificate reads from one batch sampled by π_old: the agent's tokens and, per token,
 * log π_new of the sampled token, the exact KL(π_old ‖ π_new) and the exact TV(π_old, π_new) of
 * its whole next-token distribution. Grids are [rows·length] (token-grid.ts).
 */
export interface CertificateEvidence {
  tokens: UnitTokens;
  newLogProbs: Float32Array;
  perTokenKl: Float32Array;
  perTokenTotalVariation: Float32Array;
}

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

  add({ chunk, old, current, currentLogProbs }: DistributionPair): void {
    const { vocab } = this;
    this.fusedLogProbs.set(currentLogProbs, chunk.start);
    const rows = { oldLogProbsFull: old, newLogProbsFull: current };
    const shape = { positions: chunk.positions, vocab };
    this.perTokenKl.set(tokenKl({ ...rows, ...shape }), chunk.start);
    this.perTokenTotalVariation.set(tokenTotalVariation({ ...rows, ...shape }), chunk.start);
    let cursor = 0;
    for (const item of chunk.items) {
      for (const token of item.completion) {
        this.newLogProbs[chunk.start + cursor] = current[cursor * vocab + token]!;
        cursor++;
      }
    }
    this.rankShift?.add({
      oldProbsFull: probabilities(old),
      newProbsFull: probabilities(current),
      positions: chunk.positions,
    });
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
 * exp of every entry. A plain loop: Float32Array.from with a mapping callback costs several
 * times more per entry, and these are full distributions.
 */
function probabilities(logs: Float32Array): Float32Array {
  const result = new Float32Array(logs.length);
  for (let index = 0; index < logs.length; index++) result[index] = Math.exp(logs[index]!);
  return result;
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
    for (const pair of this.reference.pairs()) collector.add(pair);
    return collector.evidence();
  }
}
