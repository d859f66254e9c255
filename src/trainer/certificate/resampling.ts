import { TeamtrError } from '../../util/errors.js';

/**
 * The lazy schedule's rule (docs/method.md §11, README.md here): after an update, keep the
 * batch in hand for the next update while what keeping it costs the next update's certificate
 * is below what this update's certificate had to spare; sample a fresh batch otherwise.
 *
 * Keeping a batch sampled by the team before the updates since (W their likelihood ratio on
 * the batch's trajectories) moves the next update's surrogate from the contexts of the team now
 * to those of the batch. Its first-order error is at most 2ε·TV(batch team, team now), ε
 * bounding |E_{π'}A| (§5's stale term, with the TV measured instead of bounded by Σ√(KL/2)).
 * TV̂ = mean (1 − W)_+ estimates that TV without bias and inside [0, 1]
 * (rl/occupancy-gap.ts). The slack is the update's own second-order certificate without any
 * stale term, L − ε·E[Σ_k |W_k − 1|·TV_k], floored at 0: the certified improvement a step like
 * this one leaves. Keep iff 2ε·TV̂ < κ·slack. κ = 0 never keeps (TeamTR: a fresh batch after
 * every update); κ = ∞ always keeps (sequential-stale with HAPPO's weights).
 */
export function resamplingRule({
  totalVariation,
  epsilon,
  surrogate,
  secondOrderPenalty,
  threshold,
}: {
  /** TV̂ between the team that sampled the batch in hand and the team now, in [0, 1]. */
  totalVariation: number;
  /** The certificate's bound on |E_{π'}A| (certificate.epsilon). */
  epsilon: number;
  /** The update's surrogate gain L on its batch. */
  surrogate: number;
  /** The update's second-order penalty ε·E[Σ_k |W_k − 1|·TV_k]. */
  secondOrderPenalty: number;
  /** κ ≥ 0; Infinity keeps every batch. */
  threshold: number;
}): { resample: boolean; staleTerm: number; slack: number } {
  if (!(threshold >= 0))
    throw new TeamtrError(
      `resamplingRule: threshold must be ≥ 0 (0 resamples after every update, Infinity never), got ${threshold}`,
    );
  if (!(totalVariation >= 0 && totalVariation <= 1))
    throw new TeamtrError(
      `resamplingRule: totalVariation must lie in [0, 1], got ${totalVariation}; estimate it with occupancyGapEstimate`,
    );
  const staleTerm = 2 * epsilon * totalVariation;
  const slack = Math.max(0, surrogate - secondOrderPenalty);
  // κ = ∞ keeps whatever the slack (∞·0 would be NaN); κ = 0 keeps nothing (staleTerm ≥ 0).
  const keep = threshold === Infinity || staleTerm < threshold * slack;
  return { resample: !keep, staleTerm, slack };
}
