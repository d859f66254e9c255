/**
 * The per-update certificate of docs/method.md §5: a lower bound on the true improvement of the team
 * reward J from one agent's update, computed from the fresh batch the update was trained on.
 *
 * Derivation. Agent i moves from π to π' while every other agent is fixed. Seen from agent i, the
 * team is an MDP whose step k is its k-th emitted token of the episode: the state s_k is the shared
 * context before that token, the action a_k is the token; other agents' turns and the verifier are
 * part of the environment. d_k (d'_k) is the distribution of s_k under π (π'), A = A^π its
 * advantage, and f_k(s) = E_{a∼π'(·|s)}[A(s, a)].
 *
 * 1. Performance difference (Kakade & Langford 2002): J' − J = Σ_k E_{s∼d'_k}[f_k(s)].
 * 2. Surrogate: swap d'_k for d_k. L = Σ_k E_{s∼d_k}[f_k(s)] = E_{τ∼π}[Σ_k ρ_k·A_k] with ρ_k the
 *    token's ratio π'/π. Since E_{a∼π}[A(s, a)] = 0, L = E_{τ∼π}[Σ_k (ρ_k − 1)·A_k]; the subtracted
 *    term has mean 0 and removes variance when A_k is an estimate.
 * 3. |J' − J − L| ≤ Σ_k |E_{d'_k} f_k − E_{d_k} f_k| ≤ Σ_k 2ε·TV(d'_k, d_k), ε = max |f_k(s)|.
 * 4. Occupancy drift. The hybrid process that follows π before step j and π' from step j on, and
 *    the one switching at j + 1, differ only at step j, where the state is still distributed as
 *    d_j; afterwards they share kernels, which cannot increase total variation. Telescoping and
 *    Pinsker (TV ≤ √(KL/2)) give
 *      TV(d'_k, d_k) ≤ Σ_{j<k} E_{s∼d_j}[TV(π(·|s), π'(·|s))] ≤ Σ_{j<k} E_{s∼d_j}[√(KL_j / 2)]
 *    with KL_j = KL(π(·|s_j) ‖ π'(·|s_j)), the exact token KL of kl.ts.
 * 5. So J' − J ≥ L − 2ε·Σ_k Σ_{j<k} E[√(KL_j/2)]. Every expectation is under the OLD team, which
 *    is what the fresh batch samples. ε: |f_k(s)| = |E_{π'}[Q(s, ·)] − V(s)| ≤ R_max − R_min, the
 *    reward range, used when nothing tighter is known.
 *
 * Stale occupancy (`sequential-stale`). There the batch comes from the stage's start team T₀,
 * while the update lands on the current team T whose earlier-updated agents m already moved to
 * π'_m. Step 5 on T₀ certifies Δ₀ = J(T₀ with π'_i) − J(T₀); the real gain is Δ = J(T with π'_i) −
 * J(T). Switch the earlier agents' tokens from π_m to π'_m one position j at a time: each switch
 * changes J(· with π'_i) and J(· with π_i) each by at most (R_max − R_min)·E[TV(π_m, π'_m)(s_j)]
 * (an average of values in [R_min, R_max] under two token distributions), so
 *   |Δ − Δ₀| ≤ 2ε·Σ_m Σ_{j ∈ m's tokens} E[√(KL_j/2)] = 2ε·Σ_m shift_m      (ε = reward range).
 * This is the occupancy mismatch between the stale team and the current team. shift_m is
 * estimated on agent m's own update batch (the exact expectation is under the hybrid team).
 * Agent i pays for the i − 1 agents updated before it, so the stage total grows like N²; with a
 * fresh batch per agent (`teamtr`) the term is 0 and the total grows like N.
 *
 * Second order (`weightedTotalVariationPenalty`). Step 5's penalty is first order in the step
 * while L is too, so it swamps L unless the step is tiny. Two facts make it second order:
 * 6. |f_k(s)| ≤ ε·TV_k(s), TV_k(s) = TV(π(·|s), π'(·|s)). Since E_π[A] = 0 and Σ_a (π' − π) = 0,
 *    f_k(s) = Σ_a (π' − π)(a|s)·Q(s, a); the positive and negative parts of π' − π each have mass
 *    TV_k(s) and Q ∈ [R_min, R_max], so f_k(s) lies within ±TV_k(s)·(R_max − R_min).
 * 7. The state is the whole context and only agent i's tokens change, so d'_k(s) / d_k(s) =
 *    W_k(s) = Π_{j<k} ρ_j, the product of the agent's ratios before its k-th token in s. Steps 1
 *    and 2 then differ exactly by J' − J − L = Σ_k E_{τ∼π}[(W_k − 1)·f_k(s_k)], and by 6
 *      |J' − J − L| ≤ ε·E_{τ∼π}[Σ_k |W_k − 1|·TV_k(s_k)].
 *    Both factors vanish with the step. W_k comes from the sampled tokens' log-probs, TV_k exactly
 *    from the full-vocabulary rows (tokenTotalVariation), and the expectation is under the old
 *    team, so the batch mean estimates this bound without bias, as step 5's mean estimates its
 *    own. Its spread grows with that of W_k (long outputs, large steps): use the standard error.
 * Weaker forms, by E_π|W_k − 1| = 2·TV(d'_k, d_k) ≤ 2·Σ_{j<k} E[TV_j] (step 4 before Pinsker):
 *    TV_k ≤ 1:             2ε·Σ_k Σ_{j<k} E[TV_j]             `totalVariationPenalty`, a bound;
 *                          ≤ step 5's penalty since TV ≤ √(KL/2); still first order.
 *    TV_k ≤ max_s TV_k(s): 2ε·Σ_k max_s TV_k(s)·Σ_{j<k} E[TV_j]   `maxStatePenalty`. The max runs
 *                          over EVERY context, which no batch sees; with the max over sampled
 *                          contexts it is an ESTIMATE that can fall below the bound.
 * Outputs of varying length. Step 4 bounds TV(d'_k, d_k) at EVERY step k below K, the most tokens
 * the agent can emit in a trajectory, also at steps a sampled trajectory never reached: the update
 * can move probability onto longer outputs. So the pairwise penalties count, after token j, all
 * K − 1 − j later steps (`horizon`), not only the row's own later tokens; with rows of different
 * lengths the row count alone can fall below the error (a test shows one). Step 7 needs no
 * horizon: where the agent emits nothing f_k = 0, so each row's own tokens are all it sums.
 * The tabular lab (src/theory/certificate-bounds.ts) checks all of them exactly: none was ever
 * violated, and the weighted one certifies most improving updates there (README of src/theory).
 * Step 7 needs the sampled tokens to come from π as scored (no temperature, top-p or stale
 * sampler) and the mask to mark every token whose policy the update changes.
 */
import { TeamtrError } from '../util/errors.js';
import { expectLength, resolveTokenGrid, type NumberArray } from './layout.js';
import type { PerTokenKlGrid } from './kl.js';
import { meanWithStandardError } from './statistics/index.js';

/** A batch estimate: the mean over trajectories and its standard error. */
export interface TrajectoryEstimate {
  mean: number;
  /** NaN with fewer than two trajectories. */
  standardError: number;
  /** [rows] the per-trajectory quantity whose mean this is. */
  perTrajectory: Float64Array;
}

function estimate(perTrajectory: Float64Array): TrajectoryEstimate {
  const { mean, standardError } = meanWithStandardError(perTrajectory);
  return { mean, standardError, perTrajectory };
}

/**
 * Surrogate gain L (step 2): per trajectory g_r = Σ_{t: mask=1} (ρ_t − 1)·A_t with
 * ρ_t = exp(logProb − oldLogProb) (computed as expm1 for precision near ρ = 1), then the mean
 * over ALL rows (a row where the agent emitted nothing contributes 0, as its sum is empty) with
 * its standard error. This is the unclipped objective PPO maximizes, per trajectory.
 */
export function surrogateGain({
  logProbs,
  oldLogProbs,
  advantages,
  mask,
  rows,
}: {
  /** [rows, length] */
  logProbs: NumberArray;
  /** [rows, length] */
  oldLogProbs: NumberArray;
  /** [rows, length] per-token advantage. */
  advantages: NumberArray;
  mask: NumberArray;
  rows: number;
}): TrajectoryEstimate {
  const { length } = resolveTokenGrid(mask, rows, 'surrogateGain');
  for (const [name, values] of [
    ['logProbs', logProbs],
    ['oldLogProbs', oldLogProbs],
    ['advantages', advantages],
  ] as const) {
    expectLength(values, rows * length, name, 'surrogateGain');
  }
  const perTrajectory = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    let sum = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] !== 1) continue;
      sum += Math.expm1(logProbs[position] - oldLogProbs[position]) * advantages[position];
    }
    perTrajectory[row] = sum;
  }
  return estimate(perTrajectory);
}

function checkKl(perTokenKl: NumberArray, mask: NumberArray, rows: number, caller: string): number {
  const { length } = resolveTokenGrid(mask, rows, caller);
  expectLength(perTokenKl, rows * length, 'perTokenKl', caller);
  for (let position = 0; position < rows * length; position++) {
    if (mask[position] === 1 && perTokenKl[position] < 0) {
      throw new TeamtrError(
        `${caller}: perTokenKl[${position}] is ${perTokenKl[position]}; a KL divergence is never ` +
          'negative (compute it with tokenKl, which cannot round below 0)',
      );
    }
  }
  return length;
}

export interface TrustRegionPenaltyResult extends TrajectoryEstimate {
  /** c·mean, the amount the certificate subtracts (c = 2ε, or ε for the weighted penalty). */
  penalty: number;
  /** c·standardError. */
  penaltyStandardError: number;
}

/**
 * Per trajectory Σ_j x_j·(number of steps k after j), over the row's masked tokens j (0-based
 * among the row's n masked tokens). With a horizon K (the most tokens the agent can emit in a
 * trajectory) every step k < K after j counts, K − 1 − j of them: the proven bound, since step 4
 * sums TV(d'_k, d_k) over every step k, also the steps a row never reached (the update can move
 * mass onto longer outputs). Without one, only the row's own later tokens count, n − 1 − j: the
 * same when every trajectory has K agent tokens, otherwise an estimate that can fall below the
 * bound (certificate-second-order.test.ts has a game where it does).
 */
function pairSums(
  perToken: NumberArray,
  mask: NumberArray,
  { rows, length, horizon }: { rows: number; length: number; horizon: number | undefined },
  transform: (value: number) => number,
  caller: string,
): Float64Array {
  const perTrajectory = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    let tokens = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) tokens++;
    }
    if (horizon !== undefined && tokens > horizon) {
      throw new TeamtrError(
        `${caller}: row ${row} has ${tokens} agent tokens, more than horizon ${horizon}; ` +
          'the horizon is the most tokens the agent can emit in one trajectory',
      );
    }
    let tokensAfter = (horizon ?? tokens) - 1;
    let sum = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] !== 1) continue;
      sum += tokensAfter * transform(perToken[position]);
      tokensAfter--;
    }
    perTrajectory[row] = sum;
  }
  return perTrajectory;
}

function checkHorizon(horizon: number | undefined, caller: string): void {
  if (horizon !== undefined && !(Number.isInteger(horizon) && horizon >= 0)) {
    throw new TeamtrError(
      `${caller}: horizon must be a non-negative integer (the most tokens the agent can emit ` +
        `in one trajectory), got ${horizon}`,
    );
  }
}

function scaledPenalty(perTrajectory: Float64Array, scale: number): TrustRegionPenaltyResult {
  const result = estimate(perTrajectory);
  return {
    ...result,
    penalty: scale * result.mean,
    penaltyStandardError: scale * result.standardError,
  };
}

/**
 * The own-update penalty of step 5: 2ε·E[Σ_k Σ_{j<k} √(KL_j/2)] over agent i's tokens j < k of a
 * trajectory. `mean`/`standardError` are for the double sum itself; `penalty` includes the
 * factor 2ε. A bound (its batch mean estimates it without bias) when `horizon` is given or every
 * trajectory has the same number of agent tokens; otherwise an estimate (see pairSums).
 */
export function trustRegionPenalty({
  perTokenKl,
  mask,
  rows,
  epsilon,
  horizon,
}: PerTokenKlGrid & {
  /** ε ≥ max |E_{a∼π_new} A|; the reward range when nothing tighter is known. */
  epsilon: number;
  /**
   * The most tokens the agent can emit in one trajectory (e.g. its turns × max new tokens per
   * turn). @default each row's own token count (a bound only for outputs of one fixed length)
   */
  horizon?: number;
}): TrustRegionPenaltyResult {
  const caller = 'trustRegionPenalty';
  const length = checkKl(perTokenKl, mask, rows, caller);
  checkEpsilon(epsilon, caller);
  checkHorizon(horizon, caller);
  const grid = { rows, length, horizon };
  const perTrajectory = pairSums(perTokenKl, mask, grid, (kl) => Math.sqrt(kl / 2), caller);
  return scaledPenalty(perTrajectory, 2 * epsilon);
}

function checkTotalVariation(
  perTokenTotalVariation: NumberArray,
  mask: NumberArray,
  rows: number,
  caller: string,
): number {
  const { length } = resolveTokenGrid(mask, rows, caller);
  expectLength(perTokenTotalVariation, rows * length, 'perTokenTotalVariation', caller);
  for (let position = 0; position < rows * length; position++) {
    const value = perTokenTotalVariation[position];
    if (mask[position] === 1 && !(value >= 0 && value <= 1)) {
      throw new TeamtrError(
        `${caller}: perTokenTotalVariation[${position}] is ${value}; a total variation lies in ` +
          '[0, 1] (compute it with tokenTotalVariation)',
      );
    }
  }
  return length;
}

/**
 * The first-order penalty with exact total variation: 2ε·E[Σ_k Σ_{j<k} TV_j] (step 4 without
 * Pinsker). A bound or an estimate exactly as trustRegionPenalty's (`horizon`), and never larger
 * than it for the same step and horizon (TV ≤ √(KL/2)).
 */
export function totalVariationPenalty({
  perTokenTotalVariation,
  mask,
  rows,
  epsilon,
  horizon,
}: {
  /** [rows, length] exact TV(π_old, π_new) of each token's distribution (tokenTotalVariation). */
  perTokenTotalVariation: NumberArray;
  mask: NumberArray;
  rows: number;
  /** The reward range R_max − R_min. */
  epsilon: number;
  /** As trustRegionPenalty's. @default each row's own token count */
  horizon?: number;
}): TrustRegionPenaltyResult {
  const caller = 'totalVariationPenalty';
  const length = checkTotalVariation(perTokenTotalVariation, mask, rows, caller);
  checkEpsilon(epsilon, caller);
  checkHorizon(horizon, caller);
  const grid = { rows, length, horizon };
  const perTrajectory = pairSums(perTokenTotalVariation, mask, grid, (value) => value, caller);
  return scaledPenalty(perTrajectory, 2 * epsilon);
}

/**
 * The second-order penalty of step 7: ε·E[Σ_k |W_k − 1|·TV_k], W_k = exp(Σ_{j<k} (logProbs_j −
 * oldLogProbs_j)) over the row's masked tokens before k (W = 1 at the first). `perTrajectory` is
 * Σ_k |W_k − 1|·TV_k; `penalty` is ε times its mean. A BOUND: every term is known at the sampled
 * positions, and the batch mean estimates the expectation without bias (standard error beside
 * it). 0 when the step is 0; ≤ the first-order penalties once the step is small.
 */
export function weightedTotalVariationPenalty({
  logProbs,
  oldLogProbs,
  perTokenTotalVariation,
  mask,
  rows,
  epsilon,
}: {
  /** [rows, length] log π_new of the sampled tokens. */
  logProbs: NumberArray;
  /** [rows, length] log π_old of the sampled tokens (the policy that sampled them). */
  oldLogProbs: NumberArray;
  /** [rows, length] exact TV(π_old, π_new) of each token's distribution (tokenTotalVariation). */
  perTokenTotalVariation: NumberArray;
  mask: NumberArray;
  rows: number;
  /** The reward range R_max − R_min (step 6 needs Q within it). */
  epsilon: number;
}): TrustRegionPenaltyResult {
  const caller = 'weightedTotalVariationPenalty';
  const length = checkTotalVariation(perTokenTotalVariation, mask, rows, caller);
  expectLength(logProbs, rows * length, 'logProbs', caller);
  expectLength(oldLogProbs, rows * length, 'oldLogProbs', caller);
  checkEpsilon(epsilon, caller);
  const perTrajectory = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    let logWeight = 0;
    let sum = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] !== 1) continue;
      // |W − 1| = |expm1(log W)|: exact digits while W ≈ 1, where the penalty is small.
      if (logWeight !== 0)
        sum += Math.abs(Math.expm1(logWeight)) * perTokenTotalVariation[position];
      logWeight += logProbs[position] - oldLogProbs[position];
    }
    perTrajectory[row] = sum;
  }
  return scaledPenalty(perTrajectory, epsilon);
}

/**
 * The max-state form: 2ε·Σ_k M_k·E[Σ_{j<k} TV_j], with M_k the largest TV at the agent's k-th
 * token (0-based among a row's masked tokens) over the batch's rows. An ESTIMATE, not a bound:
 * the bound needs M_k = max_s TV_k(s) over every context, and a batch's maximum can only be
 * smaller. `perTrajectory` is Σ_j TV_j·Σ_{k>j} M_k (k up to the batch's longest row); `penalty`
 * is 2ε times its mean; `maxTotalVariation` holds M_k.
 */
export function maxStatePenalty({
  perTokenTotalVariation,
  mask,
  rows,
  epsilon,
}: {
  /** [rows, length] exact TV(π_old, π_new) of each token's distribution (tokenTotalVariation). */
  perTokenTotalVariation: NumberArray;
  mask: NumberArray;
  rows: number;
  /** The reward range R_max − R_min. */
  epsilon: number;
}): TrustRegionPenaltyResult & { maxTotalVariation: Float64Array } {
  const length = checkTotalVariation(perTokenTotalVariation, mask, rows, 'maxStatePenalty');
  checkEpsilon(epsilon, 'maxStatePenalty');
  const maxima: number[] = [];
  for (let row = 0; row < rows; row++) {
    let index = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] !== 1) continue;
      maxima[index] = Math.max(maxima[index] ?? 0, perTokenTotalVariation[position]);
      index++;
    }
  }
  // laterMaxima[j] = Σ_{k>j} M_k.
  const laterMaxima = new Float64Array(maxima.length);
  for (let index = maxima.length - 2; index >= 0; index--) {
    laterMaxima[index] = laterMaxima[index + 1]! + maxima[index + 1]!;
  }
  const perTrajectory = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    let index = 0;
    let sum = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] !== 1) continue;
      sum += perTokenTotalVariation[position] * laterMaxima[index]!;
      index++;
    }
    perTrajectory[row] = sum;
  }
  return {
    ...scaledPenalty(perTrajectory, 2 * epsilon),
    maxTotalVariation: Float64Array.from(maxima),
  };
}

/**
 * An agent's trajectory-level shift: E[Σ_{t: mask=1} √(KL_t/2)], the mean over trajectories of the
 * summed per-token Pinsker bound, with its standard error. It bounds the total variation between
 * the trajectory distributions before and after the agent's update (step 4 with k past the end).
 */
export function trajectoryShift({ perTokenKl, mask, rows }: PerTokenKlGrid): TrajectoryEstimate {
  const length = checkKl(perTokenKl, mask, rows, 'trajectoryShift');
  const perTrajectory = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    let sum = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) sum += Math.sqrt(perTokenKl[position] / 2);
    }
    perTrajectory[row] = sum;
  }
  return estimate(perTrajectory);
}

/**
 * The stale-occupancy penalty: 2ε·Σ_m shift_m over the agents updated earlier in the stage
 * (their `trajectoryShift(...).mean`). 0 for an empty list (the `teamtr` schedule).
 */
export function staleShiftPenalty({
  earlierAgentsTrajectoryShift,
  epsilon,
}: {
  earlierAgentsTrajectoryShift: readonly number[];
  /** The reward range (see the derivation above). */
  epsilon: number;
}): number {
  checkEpsilon(epsilon, 'staleShiftPenalty');
  let sum = 0;
  for (const shift of earlierAgentsTrajectoryShift) {
    if (!(shift >= 0)) {
      throw new TeamtrError(
        `staleShiftPenalty: a trajectory shift is never negative, got ${shift}`,
      );
    }
    sum += shift;
  }
  return 2 * epsilon * sum;
}

export interface Certificate {
  /** L − penalty − stalePenalty: the certified lower bound on the update's improvement. */
  lowerBound: number;
  surrogate: number;
  penalty: number;
  stalePenalty: number;
}

/** Assembles the certificate; penalties must be ≥ 0, so lowerBound ≤ surrogate always. */
export function certificate({
  surrogate,
  penalty,
  stalePenalty = 0,
}: {
  /** L, e.g. `surrogateGain(...).mean`. */
  surrogate: number;
  /** `trustRegionPenalty(...).penalty`. */
  penalty: number;
  /** `staleShiftPenalty(...)`. @default 0 */
  stalePenalty?: number;
}): Certificate {
  if (!(penalty >= 0) || !(stalePenalty >= 0)) {
    throw new TeamtrError(
      `certificate: penalties must be ≥ 0 (got penalty ${penalty}, stalePenalty ${stalePenalty})`,
    );
  }
  return { lowerBound: surrogate - penalty - stalePenalty, surrogate, penalty, stalePenalty };
}

function checkEpsilon(epsilon: number, caller: string): void {
  if (!(epsilon >= 0) || !Number.isFinite(epsilon)) {
    throw new TeamtrError(
      `${caller}: epsilon must be finite and ≥ 0 (got ${epsilon}); use the reward range, e.g. 1 for 0/1 rewards`,
    );
  }
}
