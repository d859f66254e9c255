/**
 * The certificate of one update (docs/method.md §5): a lower bound on its true improvement, computed
 * only from the occupancy and advantages the schedule sampled from, plus exact per-position KLs.
 *
 * Notation. π is the team the update is applied to, π' the team after it, P the updated
 * positions (the agent's tokens; every position for a joint update). Ā_h(s) = Σ_a π'(a|s) Â_h(s, a)
 * with Â the advantage the schedule uses, ε = max_{h∈P, s} |Ā_h(s)|, and for every changed
 * position m, S_m = E_{s∼d_ref,m}[√(KL(π_old(·|s) ‖ π_new(·|s)) / 2)] under the schedule's
 * reference occupancy d_ref.
 *
 * Two lemmas, used throughout:
 *  (PD) performance difference, finite horizon, no discount: for any teams μ, ν,
 *       J(ν) − J(μ) = Σ_h E_{s∼d^ν_h}[Σ_a ν_h(a|s) A^μ_h(s, a)],
 *       and positions where ν_h = μ_h contribute 0 (Σ_a μ(a|s) A^μ(s, a) = 0).
 *  (TV) if ν and μ differ only at positions M, then for every h
 *       TV(d^ν_h, d^μ_h) ≤ Σ_{m∈M, m<h} E_{s∼d^μ_m}[TV(ν_m(·|s), μ_m(·|s))] ≤ Σ_{m∈M, m<h} S_m
 *       (write d^ν_{h+1}(s·a) − d^μ_{h+1}(s·a) = (d^ν_h − d^μ_h)(s) ν(a|s) + d^μ_h(s)(ν − μ)(a|s),
 *       sum absolute values, induct; Pinsker bounds each TV by √(KL/2) in either direction).
 *  Then |E_p f − E_q f| ≤ 2 · TV(p, q) · max|f|.
 *
 * Fresh occupancy (`teamtr`, and `joint` with π = start of stage). Â = A^π, d_ref = d^π, and
 *   true − L = Σ_{k∈P} (E_{d^{π'}_k} − E_{d^π_k})[Ā_k]      by (PD) with μ = π, ν = π',
 *   |true − L| ≤ 2ε Σ_{k∈P} Σ_{j∈P, j<k} S_j                 by (TV) with M = P.
 *
 * Stale occupancy (`sequential-stale`). The batch comes from the start-of-stage team π⁰:
 * Â = A^{π⁰}, d_ref = d^{π⁰}, L = Σ_{k∈P} E_{d^{π⁰}_k}[Ā_k]. Let U be the positions of agents
 * updated earlier in the stage, g_h(s) = Σ_a π_h(a|s) A^{π⁰}_h(s, a) for h ∈ U (their own Ā,
 * recorded at their update) and ε'_h = max_s |g_h(s)|. Applying (PD) to π' and to π, both
 * against π⁰, and subtracting:
 *   true = Σ_{k∈P} E_{d^{π'}_k}[Ā_k] + Σ_{h∈U} (E_{d^{π'}_h} − E_{d^π_h})[g_h], so
 *   true − L = Σ_{k∈P} (E_{d^{π'}_k} − E_{d^{π⁰}_k})[Ā_k]            (occupancy shift)
 *            + Σ_{h∈U} (E_{d^{π'}_h} − E_{d^π_h})[g_h].                (advantage drift)
 * (TV) with μ = π⁰ and M = P ∪ U bounds the first line by 2ε Σ_{k∈P} Σ_{m∈P∪U, m<k} S_m: the
 * own-shift term above plus 2ε Σ_{k∈P} Σ_{m∈U, m<k} S_m, the term that grows like N² as U grows.
 * In the second line only h after the first position of P contribute (before it d^{π'} = d^π),
 * and TV(d^{π'}_h, d^π_h) ≤ TV(d^{π'}_h, d^{π⁰}_h) + TV(d^π_h, d^{π⁰}_h) ≤ Σ_{m∈P∪U, m<h} S_m +
 * Σ_{m∈U, m<h} S_m. With one round and turn-order updates no earlier agent speaks after agent i,
 * so the drift term is empty.
 *
 * docs/method.md §5 writes the stale extra term as 2ε · Σ_{m∈U} S_m, without the sum over k ∈ P. The
 * two agree when the agent has one token (T = 1, one round); with T tokens the derivation above
 * gives up to T times more. `specFormCertificate` keeps the §5 form so that its violations can be
 * counted; `certificate` is the derived bound.
 */
export interface PositionShift {
  readonly position: number;
  /** S_m = E_{s∼d_ref}[√(KL_m(s) / 2)]. */
  readonly shift: number;
}

export interface PositionAdvantageBound {
  readonly position: number;
  /** ε'_h = max_s |g_h(s)|. */
  readonly bound: number;
}

export interface CertificateInput {
  /** L = Σ_{k∈P} E_{d_ref,k}[Ā_k]. */
  readonly surrogate: number;
  /** ε = max_{k∈P, s} |Ā_k(s)|. */
  readonly advantageBound: number;
  /** P, the updated positions. */
  readonly positions: readonly number[];
  /** S_j for j ∈ P. */
  readonly ownShifts: readonly PositionShift[];
  /** Stale only: S_m for the positions U of earlier-updated agents (empty otherwise). */
  readonly earlierShifts: readonly PositionShift[];
  /** Stale only: ε'_h for h ∈ U (empty otherwise). */
  readonly earlierAdvantageBounds: readonly PositionAdvantageBound[];
}

export interface UpdateCertificate {
  readonly surrogate: number;
  readonly advantageBound: number;
  /** 2ε Σ_{k∈P} Σ_{j∈P, j<k} S_j. */
  readonly ownShiftPenalty: number;
  /** 2ε Σ_{k∈P} Σ_{m∈U, m<k} S_m (stale only). */
  readonly occupancyShiftPenalty: number;
  /** Σ_{h∈U, h>min P} 2ε'_h (Σ_{m∈P∪U, m<h} S_m + Σ_{m∈U, m<h} S_m) (stale, several rounds). */
  readonly advantageDriftPenalty: number;
  /** The sum of the three penalties. */
  readonly penalty: number;
  /** L − penalty: the derived lower bound on the true improvement. */
  readonly certificate: number;
  /** L − ownShiftPenalty − 2ε Σ_{m∈U} S_m: the literal docs/method.md §5 form. */
  readonly specFormCertificate: number;
}

/** Σ_{k∈targets} Σ_{m∈shifts, m<k} S_m. */
export function shiftsBefore(targets: readonly number[], shifts: readonly PositionShift[]): number {
  let total = 0;
  for (const target of targets) {
    for (const { position, shift } of shifts) if (position < target) total += shift;
  }
  return total;
}

export function computeCertificate(input: CertificateInput): UpdateCertificate {
  const epsilon = input.advantageBound;
  const ownShiftPenalty = 2 * epsilon * shiftsBefore(input.positions, input.ownShifts);
  const occupancyShiftPenalty = 2 * epsilon * shiftsBefore(input.positions, input.earlierShifts);
  const firstPosition = Math.min(...input.positions);
  const allShifts = [...input.ownShifts, ...input.earlierShifts];
  let advantageDriftPenalty = 0;
  for (const { position, bound } of input.earlierAdvantageBounds) {
    if (position <= firstPosition) continue;
    const distanceBound =
      shiftsBefore([position], allShifts) + shiftsBefore([position], input.earlierShifts);
    advantageDriftPenalty += 2 * bound * distanceBound;
  }
  const penalty = ownShiftPenalty + occupancyShiftPenalty + advantageDriftPenalty;
  const earlierTotal = input.earlierShifts.reduce((total, { shift }) => total + shift, 0);
  return {
    surrogate: input.surrogate,
    advantageBound: epsilon,
    ownShiftPenalty,
    occupancyShiftPenalty,
    advantageDriftPenalty,
    penalty,
    certificate: input.surrogate - penalty,
    specFormCertificate: input.surrogate - ownShiftPenalty - 2 * epsilon * earlierTotal,
  };
}
