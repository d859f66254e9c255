import { meanTokenKl } from '../../../rl/index.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { EvidenceCollector } from './certificate-evidence.js';
import { sumsInOneOrder } from '../../../nn/shared-prefix-scoring.js';
import {
  ReferenceDistributions,
  type DistributionPair,
  type KnownHidden,
} from './reference-distributions.js';
import { withSampledHidden } from './sampled-hidden.js';
import { flatPositionsIn, type UnitTokens } from '../token-grid.js';

/** One exact-KL measurement of the current parameters, with the evidence gathered on the way. */
export interface KlMeasurement {
  kl: number;
  max: number;
  evidence: EvidenceCollector;
}

/**
 * The mean and maximum token KL of `tokens` (0 when there are none) from the π_old/π_current
 * distributions of every chunk of them, and the certificate's evidence gathered from them.
 */
export function measureKl(
  tokens: UnitTokens,
  vocabSize: number,
  pairs: Iterable<DistributionPair>,
): KlMeasurement {
  const evidence = new EvidenceCollector(tokens, vocabSize, { rankShift: true });
  for (const pair of pairs) {
    evidence.add(pair);
    pair.release();
  }
  const summary = meanTokenKl({
    perTokenKl: evidence.evidence().perTokenKl,
    mask: tokens.mask,
    rows: tokens.rows,
  });
  return {
    kl: tokens.totalTokens > 0 ? summary.mean : 0,
    max: tokens.totalTokens > 0 ? summary.max : 0,
    evidence,
  };
}

/**
 * A forward pass some other work ran at the current parameters over a minibatch of the unit's
 * tokens: its final hidden states [positions, hidden] in the minibatch's scoring order.
 */
export interface SharedForward {
  tokens: UnitTokens;
  hidden: Float32Array;
}

/**
 * Exact token-level KL(π_old ‖ π_current) of a unit's tokens against its pre-update policy,
 * chunk by chunk within the memory budget of ReferenceDistributions. π_old is fixed by `start`
 * (or by the first measurement); both take a SharedForward, whose tokens then skip the layers.
 */
export class KlMeter {
  private reference: ReferenceDistributions | null = null;

  constructor(
    private readonly model: TransformerLM,
    private readonly tokens: UnitTokens,
    private readonly budgetBytes?: number,
  ) {}

  /** Whether π_old is fixed yet. */
  get isStarted(): boolean {
    return this.reference !== null;
  }

  /**
   * Takes the current parameters as π_old; call before they first change. With a forward pass
   * to check them against, the hidden states kept while sampling stand in for the layers'
   * (sampled-hidden.ts).
   */
  start(forward: SharedForward | null = null): void {
    const known = this.known(forward);
    this.reference = new ReferenceDistributions(
      this.model,
      this.tokens.items,
      this.budgetBytes,
      known && sumsInOneOrder(this.model)
        ? withSampledHidden(this.tokens, known, this.model.config.hiddenSize)
        : known,
    );
  }

  /** The mean and maximum token KL, and the certificate's evidence, of the current parameters. */
  measure(forward: SharedForward | null = null): KlMeasurement {
    const pairs = this.started().pairs(this.known(forward));
    return measureKl(this.tokens, this.model.config.vocabSize, pairs);
  }

  private started(): ReferenceDistributions {
    if (!this.reference) this.start();
    return this.reference!;
  }

  private known(forward: SharedForward | null): KnownHidden | undefined {
    if (!forward) return undefined;
    return { positions: flatPositionsIn(this.tokens, forward.tokens), hidden: forward.hidden };
  }
}
