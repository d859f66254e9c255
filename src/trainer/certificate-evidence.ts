import { tokenKl, tokenTotalVariation } from '../rl/index.js';
import { completionLogDistributions } from '../nn/score.js';
import type { TransformerLM } from '../nn/transformer.js';
import type { TeamBatch } from '../team/types.js';
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

/** The evidence from full log-distributions [tokens, vocab] before and after an update. */
export function compareDistributions(
  tokens: UnitTokens,
  reference: Float32Array,
  current: Float32Array,
  vocab: number,
): CertificateEvidence {
  const rows = { oldLogProbsFull: reference, newLogProbsFull: current };
  const shape = { positions: tokens.totalTokens, vocab };
  return {
    tokens,
    newLogProbs: gatherTakenLogProbs(tokens, current, vocab),
    perTokenKl: toGrid(tokens, tokenKl({ ...rows, ...shape })),
    perTokenTotalVariation: toGrid(tokens, tokenTotalVariation({ ...rows, ...shape })),
  };
}

/**
 * Evidence on a batch the update never saw (the stage's held-out prompts, sampled by the team
 * before the update): π_old's distributions are taken at construction, π_new's by `after()`.
 * A certificate from the batch an update was fitted to reads its surrogate high (the update
 * maximized it on those very samples); on this batch the surrogate is an unbiased estimate.
 */
export class HeldOutEvidence {
  private readonly tokens: UnitTokens;
  private readonly reference: Float32Array;

  constructor(
    private readonly model: TransformerLM,
    readonly batch: TeamBatch,
    agentIndices: readonly number[],
  ) {
    this.tokens = collectUnitTokens(batch, agentIndices);
    this.reference = completionLogDistributions(model, this.tokens.items);
  }

  after(): CertificateEvidence {
    const current = completionLogDistributions(this.model, this.tokens.items);
    return compareDistributions(this.tokens, this.reference, current, this.model.config.vocabSize);
  }
}

/** log π(token) of each sampled token, from full log-distributions, as a grid. */
function gatherTakenLogProbs(
  tokens: UnitTokens,
  distributions: Float32Array,
  vocab: number,
): Float32Array {
  const flat = new Float32Array(tokens.totalTokens);
  let cursor = 0;
  for (const item of tokens.items) {
    for (const token of item.completion) {
      flat[cursor] = distributions[cursor * vocab + token]!;
      cursor++;
    }
  }
  return toGrid(tokens, flat);
}
