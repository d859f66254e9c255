import { TeamtrError } from '../../util/errors.js';

/**
 * The lazy schedule's rule (docs/method.md §11, README.md here): after an update, keep the
 * batch in hand for the next update while what keeping it would cost the next update's
 * certificate is below what this update's certificate had to spare; sample a fresh batch
 * otherwise.
 *
 * The batch in hand B was sampled by the team before the updates since; W is their likelihood
 * ratio on B's trajectories. The next update's surrogate read on B errs by
 * E_B[Σ_k (W_{<k} − 1)·Ā_k] over its tokens k (the old team's states reweighted to the new
 * team's), and |Ā_k| = |E_{π'}A(s_k, ·)| ≤ ε·TV_k, TV_k the next step's token total variation
 * (rl/certificate.ts, the second-order argument). So the stale term the certificate would add is
 * at most ε·E_B[Σ_k |W_{<k} − 1|·TV_k] ≤ ε·E_B[|W − 1|·Σ_k TV_k] (E[W | prefix] = W_{<k}, so
 * the whole trajectory's |W − 1| is at least as large on average). Taking the next step's
 * Σ_k TV_k as this step's, m (`stepTotalVariation`: same δ, turns of the same kind), and
 * E_B|W − 1| = 2·TV(B's team, team now), estimated by 2·TV̂ with TV̂ = mean (1 − W)_+
 * (rl/occupancy-gap.ts: unbiased, inside [0, 1]):
 *
 *   staleTerm = 2ε·TV̂·m        (an estimate: m is forecast, not known)
 *
 * The slack is this update's second-order certificate without any stale term, L − ε·E[Σ_k
 * |W_k − 1|·TV_k], floored at 0: the certified improvement a step like this leaves. Keep iff
 * staleTerm < κ·slack. κ = 0 never keeps (TeamTR: a fresh batch after every update); κ = ∞
 * always keeps (sequential-stale with HAPPO's weights).
 */
export function resamplingRule({
  totalVariation,
  stepTotalVariation,
  epsilon,
  surrogate,
  secondOrderPenalty,
  threshold,
}: {
  /** TV̂ between the team that sampled the batch in hand and the team now, in [0, 1]. */
  totalVariation: number;
  /** m: mean over trajectories of Σ over the updated agent's tokens of its token TV. */
  stepTotalVariation: number;
  /** The certificate's bound on the range of Q (certificate.epsilon). */
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
  if (!(stepTotalVariation >= 0))
    throw new TeamtrError(
      `resamplingRule: stepTotalVariation must be ≥ 0 (a sum of token total variations), got ${stepTotalVariation}`,
    );
  const staleTerm = 2 * epsilon * totalVariation * stepTotalVariation;
  const slack = Math.max(0, surrogate - secondOrderPenalty);
  // κ = ∞ keeps whatever the slack (∞·0 would be NaN); κ = 0 keeps nothing (staleTerm ≥ 0).
  const keep = threshold === Infinity || staleTerm < threshold * slack;
  return { resample: !keep, staleTerm, slack };
}
