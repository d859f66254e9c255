import type { UpdateCertificate } from './certificate.js';
import { expectedSqrtHalf, perStateKl, policyAdvantage, type ExactAnalysis } from './exact.js';
import type { TabularGame } from './game.js';
import type { TeamPolicy } from './policy.js';

/**
 * Tighter certificates of one update, computed exactly (certificate.ts has the notation and the
 * two lemmas PD and TV). Each is L minus a penalty that provably bounds |true − L|; they differ in
 * what they may know, from what a language-model trainer can compute to what only this lab can.
 *
 * Per-state step. For a changed position h let TV_h(s) = TV(π_before,h(·|s), π_after,h(·|s)): for
 * h ∈ P the updated agent's step (its table in π vs π'), for h ∈ U an earlier agent's step (its
 * table in π_ref vs π). The quantities whose expectations the error is made of are
 *   f_k(s) = Σ_a π'_k(a|s) Â_k(s, a)   (k ∈ P, the Ā of certificate.ts),
 *   g_h(s) = Σ_a π_h(a|s) Â_h(s, a)    (h ∈ U).
 * Since Σ_a π_ref,h(a|s) Â_h(s, a) = 0, f_k(s) = Σ_a (π'_k − π_ref,k)(a|s) Q_k(s, a) (and likewise
 * g_h), and the positive and negative parts of π' − π_ref each have mass TV_h(s), so
 *   |f_k(s)| ≤ TV_k(s) · (max_a Q_k(s, a) − min_a Q_k(s, a)) ≤ ε_R · TV_k(s),
 * ε_R = R_max − R_min the reward range. (For k ∈ P, π_ref,k = π_k: an agent is updated once per
 * stage, so its tables in the applied team are still the reference's.) This is what makes the
 * penalties below second order in the step: the first-order bound charges ε_R where the error can
 * only reach ε_R · TV_k.
 *
 * Exact error (certificate.ts):
 *   true − L = Σ_{k∈P} (E_{d'_k} − E_{d_ref,k})[f_k] + Σ_{h∈U} (E_{d'_h} − E_{d_h})[g_h],
 * d' = d^{π'}, d = d^π, d_ref = d^{π_ref} (= d for fresh occupancy, and U is empty there).
 *
 * The bounds, loosest first (each penalty ≤ the one before, see the tests):
 *  lmCurrent         certificate.ts's bound with ε = ε_R and Pinsker shifts S_m: what the trainer
 *                    computes today (trustRegionPenalty + staleShiftPenalty in src/rl).
 *  lmTotalVariation  the same with S_m = E_{d_ref,m}[TV_m] (exact TV ≤ √(KL/2)). First order.
 *  lmMaxState        |E_p f − E_q f| ≤ 2 TV(p, q) max_s |f| with max_s |f_h| ≤ ε_R · max_s TV_h(s):
 *                    the pairwise form with per-position ε_h = ε_R · max_s TV_h(s), the maximum
 *                    over EVERY state of length h. Second order. A trainer sees only sampled
 *                    states, so there it is an estimate, not a bound.
 *  lmWeighted        |Σ_s (p − q)(s) f(s)| ≤ Σ_s |p(s) − q(s)| · ε_R · TV(s). The state is the whole
 *                    prefix, so p(s)/q(s) = Π_{m<k} ρ_m(s) =: W_k(s), the product of the ratios of
 *                    the changed tokens in s, and Σ_s |p − q| ε_R TV = ε_R · E_{s∼q}[|W_k(s) − 1| ·
 *                    TV_k(s)]: an expectation under the sampling team of quantities known at
 *                    sampled positions, so a trainer's batch mean estimates it without bias.
 *                    Second order. ≤ lmMaxState since E_q|W − 1| = 2 TV(p, q).
 *  exactWeighted     Σ_s |p(s) − q(s)| · |f(s)|: the triangle inequality alone, with the true
 *                    f at every state. Lab only (a trainer does not know f_k(s)); the tightest
 *                    bound of this form, and the floor the others are measured against.
 * lmWeighted and exactWeighted are written with the exact |d' − d| rather than a telescoped bound
 * on it; for U (stale) the drift term's p, q are d'_h and d_h as in the exact error above.
 */
export interface TighterCertificates {
  /** certificate.ts's certificate (ε = max |Ā| over states, Pinsker): the lab's current bound. */
  readonly current: number;
  readonly lmCurrent: number;
  readonly lmTotalVariation: number;
  readonly lmMaxState: number;
  readonly lmWeighted: number;
  readonly exactWeighted: number;
}

export type CertificateBoundKey = keyof TighterCertificates;

export interface CertificateBoundInfo {
  readonly key: CertificateBoundKey;
  /** Key in `teamtr theory --json`. */
  readonly summaryKey: string;
  readonly description: string;
}

/** Every certificate the lab checks, in the order of the derivation above. */
export const certificateBounds: readonly CertificateBoundInfo[] = [
  {
    key: 'current',
    summaryKey: 'current',
    description: 'certificate.ts: 2ε·Σ_k Σ_{j<k} √(KL_j/2), ε = max_{k,s} |Ā_k(s)|',
  },
  {
    key: 'lmCurrent',
    summaryKey: 'lm_current',
    description: "today's trainer form: 2ε_R·Σ_k Σ_{j<k} √(KL_j/2), ε_R the reward range",
  },
  {
    key: 'lmTotalVariation',
    summaryKey: 'lm_total_variation',
    description: 'first order, exact TV: 2ε_R·Σ_k Σ_{j<k} E[TV_j]',
  },
  {
    key: 'lmMaxState',
    summaryKey: 'lm_max_state',
    description: 'second order: Σ_k 2ε_R·max_s TV_k(s)·Σ_{j<k} E[TV_j]',
  },
  {
    key: 'lmWeighted',
    summaryKey: 'lm_weighted',
    description: 'second order: ε_R·Σ_k E[|W_k − 1|·TV_k], W_k the ratio product before k',
  },
  {
    key: 'exactWeighted',
    summaryKey: 'exact_weighted',
    description: 'lab only: Σ_k Σ_s |d′_k − d_k|(s)·|Ā_k(s)|',
  },
];

/** What one update's tighter certificates are computed from. */
export interface UpdateGeometry {
  readonly game: TabularGame;
  /** The team whose occupancy and advantages the update used (π_ref). */
  readonly reference: ExactAnalysis;
  readonly referenceTeam: TeamPolicy;
  /** The team the update is applied to (π) and the team after it (π'). */
  readonly current: TeamPolicy;
  readonly next: TeamPolicy;
  readonly currentOccupancy: readonly Float64Array[];
  readonly nextOccupancy: readonly Float64Array[];
  /** P, the updated positions (ascending). */
  readonly positions: readonly number[];
  /** U, positions where π differs from π_ref (stale schedule only; ascending). */
  readonly earlierPositions: readonly number[];
  /** certificate.ts's certificate of the same update (and its surrogate L). */
  readonly certificate: UpdateCertificate;
}

/** TV(π_a(·|s), π_b(·|s)) for every prefix s of one position. [V^h] */
export function perStateTotalVariation(
  first: Float64Array,
  second: Float64Array,
  vocabularySize: number,
): Float64Array {
  const result = new Float64Array(first.length / vocabularySize);
  for (let state = 0; state < result.length; state++) {
    let total = 0;
    for (let token = 0; token < vocabularySize; token++) {
      const entry = state * vocabularySize + token;
      total += Math.abs(first[entry]! - second[entry]!);
    }
    result[state] = total / 2;
  }
  return result;
}

/** A changed position's per-state step and per-state error term (f_k or g_h). */
interface ChangedPosition {
  readonly position: number;
  readonly own: boolean;
  /** TV_h(s). */
  readonly stepTotalVariation: Float64Array;
  /** f_k(s) or g_h(s). */
  readonly errorTerm: Float64Array;
  /** E_{d_ref,h}[TV_h]. */
  readonly expectedTotalVariation: number;
  /** max_s TV_h(s). */
  readonly maxTotalVariation: number;
  /** E_{d_ref,h}[√(KL(π_before,h ‖ π_after,h) / 2)], certificate.ts's S_h. */
  readonly expectedPinsker: number;
}

function describeChange(geometry: UpdateGeometry, position: number, own: boolean): ChangedPosition {
  const { game, reference } = geometry;
  const before = own ? geometry.current : geometry.referenceTeam;
  const after = own ? geometry.next : geometry.current;
  const stepTotalVariation = perStateTotalVariation(
    before.tables[position]!.probabilities,
    after.tables[position]!.probabilities,
    game.vocabularySize,
  );
  const occupancy = reference.occupancy[position]!;
  let expectedTotalVariation = 0;
  let maxTotalVariation = 0;
  for (let state = 0; state < stepTotalVariation.length; state++) {
    expectedTotalVariation += occupancy[state]! * stepTotalVariation[state]!;
    maxTotalVariation = Math.max(maxTotalVariation, stepTotalVariation[state]!);
  }
  const errorTerm = policyAdvantage(
    after.tables[position]!,
    reference.advantages[position]!,
    game.vocabularySize,
  );
  const kl = perStateKl(before.tables[position]!, after.tables[position]!, game.vocabularySize);
  return {
    position,
    own,
    stepTotalVariation,
    errorTerm,
    expectedTotalVariation,
    maxTotalVariation,
    expectedPinsker: expectedSqrtHalf(occupancy, kl),
  };
}

/** R_max − R_min over every transcript. */
export function rewardRange(game: TabularGame): number {
  let smallest = Infinity;
  let largest = -Infinity;
  for (const reward of game.rewards) {
    smallest = Math.min(smallest, reward);
    largest = Math.max(largest, reward);
  }
  return largest - smallest;
}

/**
 * The pairwise penalty of certificate.ts with a bound b_h ≥ max_s |f_h| (or |g_h|) per position
 * and shifts S_m ≥ E_{d_ref,m}[TV_m]:
 *   Σ_{k∈P} 2 b_k Σ_{m∈P∪U, m<k} S_m + Σ_{h∈U, h>min P} 2 b_h (Σ_{m∈P∪U, m<h} S_m + Σ_{m∈U, m<h} S_m).
 */
export function pairwisePenalty(
  changes: readonly { position: number; own: boolean; bound: number; shift: number }[],
): number {
  const own = changes.filter((change) => change.own);
  if (own.length === 0) return 0;
  const firstOwn = Math.min(...own.map((change) => change.position));
  let penalty = 0;
  for (const target of changes) {
    if (!target.own && target.position <= firstOwn) continue;
    let before = 0;
    for (const change of changes) {
      if (change.position >= target.position) continue;
      before += change.own || target.own ? change.shift : 2 * change.shift;
    }
    penalty += 2 * target.bound * before;
  }
  return penalty;
}

/** Σ_s |p(s) − q(s)| · weight(s). */
function weightedDifference(
  first: Float64Array,
  second: Float64Array,
  weight: (state: number) => number,
): number {
  let total = 0;
  for (let state = 0; state < first.length; state++) {
    const difference = Math.abs(first[state]! - second[state]!);
    if (difference > 0) total += difference * weight(state);
  }
  return total;
}

/** Every certificate of `TighterCertificates` for one update, exactly. */
export function computeTighterCertificates(geometry: UpdateGeometry): TighterCertificates {
  const epsilon = rewardRange(geometry.game);
  const changes = [
    ...geometry.positions.map((position) => describeChange(geometry, position, true)),
    ...geometry.earlierPositions.map((position) => describeChange(geometry, position, false)),
  ].sort((first, second) => first.position - second.position);
  const pairwise = (bound: (change: ChangedPosition) => number, pinskerShifts: boolean) =>
    pairwisePenalty(
      changes.map((change) => ({
        position: change.position,
        own: change.own,
        bound: bound(change),
        shift: pinskerShifts ? change.expectedPinsker : change.expectedTotalVariation,
      })),
    );
  let lmWeighted = 0;
  let exactWeighted = 0;
  for (const change of changes) {
    // The error's measures: d'_k against d_ref,k for P, d'_h against d_h for U.
    const first = geometry.nextOccupancy[change.position]!;
    const second = change.own
      ? geometry.reference.occupancy[change.position]!
      : geometry.currentOccupancy[change.position]!;
    lmWeighted += weightedDifference(
      first,
      second,
      (state) => epsilon * change.stepTotalVariation[state]!,
    );
    exactWeighted += weightedDifference(first, second, (state) =>
      Math.abs(change.errorTerm[state]!),
    );
  }
  const { surrogate } = geometry.certificate;
  return {
    current: geometry.certificate.certificate,
    lmCurrent: surrogate - pairwise(() => epsilon, true),
    lmTotalVariation: surrogate - pairwise(() => epsilon, false),
    lmMaxState: surrogate - pairwise((change) => epsilon * change.maxTotalVariation, false),
    lmWeighted: surrogate - lmWeighted,
    exactWeighted: surrogate - exactWeighted,
  };
}
