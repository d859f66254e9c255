import type { TabularGame } from './game.js';
import { tableFromLogits, type PositionTable, type TeamPolicy } from './policy.js';

/**
 * One agent's exact trust-region step in a tabular game (docs/method.md §3).
 *
 * Direction (natural gradient). With logits θ_h(s, ·) at the agent's positions P, the surrogate
 *   L(θ) = Σ_{h∈P} Σ_s d_h(s) Σ_a π_θ(a|s) A_h(s, a)
 * has gradient ∂L/∂θ_h(s, a) = d_h(s) π(a|s) (A_h(s, a) − Ā_h(s)) at θ_old, Ā_h(s) = Σ_a π A.
 * The token-level KL K(θ) = (1/|P|) Σ_{h∈P} Σ_s d_h(s) KL(π_old(·|s) ‖ π_θ(·|s)) has Hessian
 * (the Fisher) F = (1/|P|) ⊕_{h,s} d_h(s) (diag π − π πᵀ) at θ_old, and
 *   F · (|P| · A_h(s, ·)) = d_h(s) (π ∘ A − π (πᵀA)) = ∇L,
 * so the natural gradient F⁺∇L is the advantage table itself (up to per-row constants, which a
 * softmax ignores), at every prefix with positive occupancy (all of them: every π > 0). The step
 * is therefore the exponentiated-advantage update π_new(a|s) ∝ π_old(a|s) · exp(η A_h(s, a)).
 *
 * Size (exact, not the quadratic approximation). Along that line
 *   K(η) = (1/|P|) Σ_h Σ_s d_h(s) [ log Σ_a π(a|s) e^{η A(s,a)} − η E_π[A](s) ],
 *   K'(η) = (1/|P|) Σ d_h(s) (E_{π_η}[A](s) − E_π[A](s)),   K''(η) = (1/|P|) Σ d_h(s) Var_{π_η}(A) ≥ 0,
 * with K(0) = K'(0) = 0. K is convex and non-decreasing on η ≥ 0 and grows without bound unless
 * A is constant within every row, so K(η) = δ has one positive root. Newton's method on a convex
 * increasing function lands at or right of the root from any start with K' > 0 and then descends
 * monotonically onto it; we start from the quadratic estimate η₀ = √(2δ / K''(0)) and keep a
 * bracket, bisecting if a step ever leaves it (it should not, but rounding is rounding).
 */
export interface TrustRegionStepInput {
  readonly game: TabularGame;
  /** The team before the step; its tables at `positions` are π_old. */
  readonly team: TeamPolicy;
  /** The updated agent's token positions. */
  readonly positions: readonly number[];
  /** The occupancy the step is computed under (fresh: current team; stale: start of stage). */
  readonly occupancy: readonly Float64Array[];
  /** The advantages the step follows (the same team as the occupancy). */
  readonly advantages: readonly Float64Array[];
  /** Target token-level KL δ. */
  readonly delta: number;
}

export interface TrustRegionStep {
  /** The agent's new tables, keyed by position. */
  readonly tables: ReadonlyMap<number, PositionTable>;
  /** η of π_new ∝ π_old · exp(η A). */
  readonly stepSize: number;
  /** K(η) as solved (≈ δ unless `reachedDelta` is false). */
  readonly tokenKl: number;
  /** False only when no step can move the policy (A constant within every row): then η = 0. */
  readonly reachedDelta: boolean;
  readonly newtonIterations: number;
}

interface KlAlongLine {
  readonly kl: number;
  readonly slope: number;
  readonly curvature: number;
}

/**
 * The agent's rows gathered once per step (all its positions, concatenated), with what does
 * not depend on η precomputed: the row maximum of A (so max_a η·A = η·max A for η ≥ 0) and
 * E_π[A] per row. Occupancy weights are pre-divided by |P|. [rows] or [rows × V]
 */
interface ExponentiatedLine {
  readonly vocabularySize: number;
  readonly weights: Float64Array;
  readonly probabilities: Float64Array;
  readonly advantages: Float64Array;
  readonly rowMaximum: Float64Array;
  readonly oldMean: Float64Array;
}

function gatherLine(input: TrustRegionStepInput): ExponentiatedLine {
  const vocabularySize = input.game.vocabularySize;
  const rows = input.positions.reduce(
    (total, position) => total + input.occupancy[position]!.length,
    0,
  );
  const line = {
    vocabularySize,
    weights: new Float64Array(rows),
    probabilities: new Float64Array(rows * vocabularySize),
    advantages: new Float64Array(rows * vocabularySize),
    rowMaximum: new Float64Array(rows),
    oldMean: new Float64Array(rows),
  };
  let row = 0;
  for (const position of input.positions) {
    const occupancy = input.occupancy[position]!;
    line.probabilities.set(input.team.tables[position]!.probabilities, row * vocabularySize);
    line.advantages.set(input.advantages[position]!, row * vocabularySize);
    for (let state = 0; state < occupancy.length; state++, row++) {
      line.weights[row] = occupancy[state]! / input.positions.length;
      let largest = -Infinity;
      let mean = 0;
      for (let entry = row * vocabularySize; entry < (row + 1) * vocabularySize; entry++) {
        largest = Math.max(largest, line.advantages[entry]!);
        mean += line.probabilities[entry]! * line.advantages[entry]!;
      }
      line.rowMaximum[row] = largest;
      line.oldMean[row] = mean;
    }
  }
  return line;
}

/** K(η), K'(η), K''(η) along the exponentiated-advantage line (η ≥ 0). */
function klAlongLine(line: ExponentiatedLine, stepSize: number): KlAlongLine {
  const { vocabularySize, weights, probabilities, advantages, rowMaximum, oldMean } = line;
  let kl = 0;
  let slope = 0;
  let curvature = 0;
  for (let row = 0; row < weights.length; row++) {
    const largest = stepSize * rowMaximum[row]!;
    let normalizer = 0;
    let firstMoment = 0;
    let secondMoment = 0;
    for (let entry = row * vocabularySize; entry < (row + 1) * vocabularySize; entry++) {
      const advantage = advantages[entry]!;
      // exp(0) = 1 exactly; skipping it at η = 0 saves a fifth of the solver's work.
      const weight =
        stepSize === 0
          ? probabilities[entry]!
          : probabilities[entry]! * Math.exp(stepSize * advantage - largest);
      normalizer += weight;
      firstMoment += weight * advantage;
      secondMoment += weight * advantage * advantage;
    }
    const newMean = firstMoment / normalizer;
    const rowWeight = weights[row]!;
    kl += rowWeight * (largest + Math.log(normalizer) - stepSize * oldMean[row]!);
    slope += rowWeight * (newMean - oldMean[row]!);
    curvature += rowWeight * Math.max(0, secondMoment / normalizer - newMean * newMean);
  }
  return { kl: Math.max(0, kl), slope, curvature };
}

const maxNewtonIterations = 200;
const relativeTolerance = 1e-12;

/** Solves K(η) = δ for the exponentiated-advantage step (see the file comment). */
export function solveStepSize(input: TrustRegionStepInput): {
  stepSize: number;
  tokenKl: number;
  reachedDelta: boolean;
  iterations: number;
} {
  if (!(input.delta > 0) || input.positions.length === 0) {
    return { stepSize: 0, tokenKl: 0, reachedDelta: input.delta === 0, iterations: 0 };
  }
  const line = gatherLine(input);
  const initialCurvature = klAlongLine(line, 0).curvature;
  if (!(initialCurvature > 0))
    return { stepSize: 0, tokenKl: 0, reachedDelta: false, iterations: 0 };
  let stepSize = Math.sqrt((2 * input.delta) / initialCurvature);
  let below = 0;
  let above = Infinity;
  for (let iteration = 1; iteration <= maxNewtonIterations; iteration++) {
    const { kl, slope } = klAlongLine(line, stepSize);
    const gap = kl - input.delta;
    if (Math.abs(gap) <= relativeTolerance * input.delta) {
      return { stepSize, tokenKl: kl, reachedDelta: true, iterations: iteration };
    }
    if (gap < 0) below = Math.max(below, stepSize);
    else above = Math.min(above, stepSize);
    let next = slope > 0 ? stepSize - gap / slope : NaN;
    if (!(next > below && next < above)) {
      next = Number.isFinite(above) ? (below + above) / 2 : 2 * Math.max(stepSize, below);
    }
    if (next === stepSize)
      return { stepSize, tokenKl: kl, reachedDelta: true, iterations: iteration };
    stepSize = next;
  }
  const { kl } = klAlongLine(line, stepSize);
  return {
    stepSize,
    tokenKl: kl,
    reachedDelta: Math.abs(kl - input.delta) <= 1e-6 * input.delta,
    iterations: maxNewtonIterations,
  };
}

/** The agent's exact trust-region step: π_new ∝ π_old · exp(η A) with token-level KL = δ. */
export function trustRegionStep(input: TrustRegionStepInput): TrustRegionStep {
  const solution = solveStepSize(input);
  const tables = new Map<number, PositionTable>();
  for (const position of input.positions) {
    if (solution.stepSize === 0) {
      tables.set(position, input.team.tables[position]!);
      continue;
    }
    const { logProbabilities } = input.team.tables[position]!;
    const advantages = input.advantages[position]!;
    const logits = new Float64Array(logProbabilities.length);
    for (let entry = 0; entry < logits.length; entry++) {
      logits[entry] = logProbabilities[entry]! + solution.stepSize * advantages[entry]!;
    }
    tables.set(position, tableFromLogits(logits, input.game.vocabularySize));
  }
  return {
    tables,
    stepSize: solution.stepSize,
    tokenKl: solution.tokenKl,
    reachedDelta: solution.reachedDelta,
    newtonIterations: solution.iterations,
  };
}
