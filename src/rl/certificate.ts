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
 */
import { TeamtrError } from '../util/errors.js';
import { expectLength, resolveTokenGrid, type NumberArray } from './layout.js';
import { meanWithStandardError } from './statistics.js';

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
  /** 2ε·mean: the amount the certificate subtracts. */
  penalty: number;
  /** 2ε·standardError. */
  penaltyStandardError: number;
}

/**
 * The own-update penalty of step 5: 2ε·E[Σ_k Σ_{j<k} √(KL_j/2)] over agent i's tokens j < k of a
 * trajectory. The double sum is computed in one pass: token j (0-based among the row's n masked
 * tokens) is followed by n − 1 − j later tokens k, so Σ_k Σ_{j<k} x_j = Σ_j (n − 1 − j)·x_j.
 * `mean`/`standardError` are for the double sum itself; `penalty` includes the factor 2ε.
 */
export function trustRegionPenalty({
  perTokenKl,
  mask,
  rows,
  epsilon,
}: {
  /** [rows, length] exact per-token KL(π_old ‖ π_new). */
  perTokenKl: NumberArray;
  mask: NumberArray;
  rows: number;
  /** ε ≥ max |E_{a∼π_new} A|; the reward range when nothing tighter is known. */
  epsilon: number;
}): TrustRegionPenaltyResult {
  const length = checkKl(perTokenKl, mask, rows, 'trustRegionPenalty');
  checkEpsilon(epsilon, 'trustRegionPenalty');
  const perTrajectory = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    let tokensAfter = -1;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) tokensAfter++;
    }
    let sum = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] !== 1) continue;
      sum += tokensAfter * Math.sqrt(perTokenKl[position] / 2);
      tokensAfter--;
    }
    perTrajectory[row] = sum;
  }
  const result = estimate(perTrajectory);
  return {
    ...result,
    penalty: 2 * epsilon * result.mean,
    penaltyStandardError: 2 * epsilon * result.standardError,
  };
}

/**
 * An agent's trajectory-level shift: E[Σ_{t: mask=1} √(KL_t/2)], the mean over trajectories of the
 * summed per-token Pinsker bound, with its standard error. It bounds the total variation between
 * the trajectory distributions before and after the agent's update (step 4 with k past the end).
 */
export function trajectoryShift({
  perTokenKl,
  mask,
  rows,
}: {
  /** [rows, length] */
  perTokenKl: NumberArray;
  mask: NumberArray;
  rows: number;
}): TrajectoryEstimate {
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
