import { inRegionTolerance, type PolicyLoss, type RankBucketShift } from '../../rl/index.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { clipGradientNorm } from '../../optim/clip.js';
import type { RandomGenerator } from '../../util/random.js';
import type { TeamBatch } from '../../team/types.js';
import { captureSnapshot, interpolateParameters, restoreSnapshot } from './parameter-state.js';
import { collectUnitTokens, rowValues, type UnitTokens } from './token-grid.js';
import type { LocalUnit } from './units.js';
import type { CertificateEvidence } from './local/certificate-evidence.js';
import { gradientStep } from './local/gradient-step.js';
import { KlMeter, type Measurement } from './local/kl-meter.js';
import { MinibatchDraws } from './minibatches.js';
import type { TrustRegionOutcome } from '../records.js';

export { minibatches } from './minibatches.js';

/** How an update runs; the radius δ and the learning rate are the unit's own. */
export interface TrustRegionSettings {
  epochs: number;
  minibatches: number;
  backoff: 'restore' | 'line-search';
  maxGradNorm: number;
  /** The objective's loss (rl/objectives) with its settings. */
  policyLoss: PolicyLoss;
}

/** The accepted update; its CertificateEvidence is that of the accepted parameters. */
export interface TrustRegionResult extends CertificateEvidence, TrustRegionOutcome {
  lossMean: number;
  clipFraction: number;
  gradientNorm: number;
  /** How the update moved probability between the tokens π_old ranked 1st, 2nd, … */
  probabilityShiftByRank: RankBucketShift[];
  /**
   * log π_new of the unit's tokens in scoring order (tokens.items), as scoreToArrays computes
   * them (the fused gather), from the same pass as the evidence. Absent for a unit on a
   * service.
   */
  scoredLogProbs?: Float32Array;
}

const lineSearchScales = [0.5, 0.25, 0.125, 0.0625];

/**
 * The per-agent trust-region update (docs/method.md §3): clipped-surrogate epochs over minibatches
 * of the unit's own tokens; after every optimizer step the exact token-level KL against the
 * pre-update policy is measured over the whole batch, and a step that leaves the region is
 * backtracked along its direction (line search) or undone, which ends the update. The
 * accepted parameters are therefore always in region. Each measurement also gathers the
 * certificate's evidence, so the accepted parameters' evidence is the one of their own
 * measurement; only parameters restored to the start of the update are measured again.
 *
 * A measurement and the next step's forward pass see the same parameters, so they share it: the
 * next minibatch is drawn first, its forward pass (with gradients) runs, the measurement takes
 * that minibatch's hidden states from it and runs the layers only over the other tokens, and the
 * step's backward pass follows only if the parameters are in region (else its graph is dropped).
 * π_old takes the first step's forward pass the same way. A step too large for the activation
 * budget runs in micro-batches, each backward right after its forward, and the measurement then
 * decides whether the accumulated gradient is kept (gradient-step.ts). No number changes.
 */
export function trustRegionUpdate(options: TrustRegionUpdateOptions): TrustRegionResult {
  const { unit, batch } = options;
  const tokens = collectUnitTokens(batch, unit.agentIndices);
  const meter = new KlMeter(unit.model, tokens, options.distributionBudgetBytes);
  const steps = takeSteps(options, tokens, meter);
  const final = steps.kept ?? meter.measure();
  const { evidence } = final;
  return {
    ...evidence.evidence(),
    kl: final.kl,
    maxTokenKl: final.max,
    inRegion: final.kl <= unit.delta + inRegionTolerance,
    ...steps.summary,
    probabilityShiftByRank: evidence.probabilityShiftByRank(),
    scoredLogProbs: evidence.scoredLogProbs(),
  };
}

export interface TrustRegionUpdateOptions {
  unit: LocalUnit;
  batch: TeamBatch;
  /** Per-trajectory advantages for the loss. */
  advantages: ArrayLike<number>;
  /** Trajectories that take part (dynamic sampling drops the rest). */
  trajectories: readonly number[];
  settings: TrustRegionSettings;
  random: RandomGenerator;
  /**
   * Bytes of full-vocabulary distributions held at once by the exact KL; beyond it π_old is
   * recomputed chunk by chunk from a copy of the pre-update parameters (reference-distributions.ts).
   * @default distributionBudgetBytes (64 MiB)
   */
  distributionBudgetBytes?: number;
  /**
   * Bytes of activations a gradient step keeps for its backward pass; a larger minibatch runs
   * in micro-batches (gradient-step.ts). @default activationBudgetBytes (512 MiB)
   */
  activationBudgetBytes?: number;
}

type StepSummary = Pick<
  TrustRegionResult,
  'stepsTaken' | 'stepsUndone' | 'lastStepScale' | 'lossMean' | 'clipFraction' | 'gradientNorm'
>;

/**
 * Optimizer steps over minibatches of the unit's tokens, each followed by the exact KL of the
 * whole batch; the first step out of region is backed off and ends the update. `kept` is the
 * measurement of the parameters the update ends with (null when they are the starting ones,
 * which were never measured). Each measurement but the last runs inside the next step, between
 * its forward and backward passes (`beforeBackward`), and decides whether that step goes on.
 */
function takeSteps(
  options: TrustRegionUpdateOptions,
  tokens: UnitTokens,
  meter: KlMeter,
): { summary: StepSummary; kept: Measurement | null } {
  const { unit, settings } = options;
  const parameters = unit.model.trainableParameters();
  let snapshot = captureSnapshot(parameters);
  let kept: Measurement | null = null;
  const summary = { stepsTaken: 0, stepsUndone: 0, lastStepScale: 1, gradientNorm: 0 };
  const losses: number[] = [];
  const clipFractions: number[] = [];
  /** In region, the measured parameters become the ones a later back-off returns to. */
  const inRegion = (measured: Measurement) => {
    if (measured.kl > unit.delta) return false;
    snapshot = captureSnapshot(parameters);
    kept = measured;
    return true;
  };
  const draws = new MinibatchDraws(options, tokens);
  let outOfRegion = false;
  for (let minibatch = draws.next(); minibatch; minibatch = draws.next()) {
    const current = minibatch;
    const step = gradientStep(
      unit.model,
      current,
      rowValues(current, options.advantages),
      settings.policyLoss,
      {
        budgetBytes: options.activationBudgetBytes,
        afterForward: (forward) => {
          const shared = { tokens: current, hidden: forward.hidden };
          if (summary.stepsTaken > 0) return inRegion(meter.measure(shared));
          meter.start(shared);
          return true;
        },
      },
    );
    if (!step) {
      // The parameters before this step are out of region; it never happens.
      draws.putBack();
      outOfRegion = true;
      break;
    }
    losses.push(step.loss);
    clipFractions.push(step.clipFraction);
    const clipping = clipGradientNorm(parameters, settings.maxGradNorm);
    summary.gradientNorm = clipping.norm;
    unit.optimizer.update({ learningRate: unit.learningRate, gradientScale: clipping.scale });
    unit.optimizer.zeroGrad();
    summary.stepsTaken++;
  }
  if (!outOfRegion && summary.stepsTaken > 0) outOfRegion = !inRegion(meter.measure());
  if (outOfRegion) {
    // Back off and end the update.
    let accepted: Measurement | null = null;
    summary.lastStepScale = backOff(parameters, snapshot, settings.backoff, () => {
      const candidate = meter.measure();
      accepted = candidate.kl <= unit.delta ? candidate : null;
      return accepted !== null;
    });
    if (summary.lastStepScale === 0) summary.stepsUndone++;
    else kept = accepted;
  }
  return {
    summary: { ...summary, lossMean: meanOrZero(losses), clipFraction: meanOrZero(clipFractions) },
    kept,
  };
}

function meanOrZero(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}

/**
 * Restores the last in-region parameters, or first tries fractions of the offending step.
 * Returns the scale kept (0 = fully undone).
 */
export function backOff(
  parameters: ReturnType<TransformerLM['trainableParameters']>,
  snapshot: ReturnType<typeof captureSnapshot>,
  backoff: TrustRegionSettings['backoff'],
  inRegion: () => boolean,
): number {
  if (backoff === 'line-search') {
    const stepEnd = parameters.map(({ tensor }) => tensor.data.slice());
    for (const scale of lineSearchScales) {
      interpolateParameters(parameters, snapshot, stepEnd, scale);
      if (inRegion()) return scale;
    }
  }
  restoreSnapshot(parameters, snapshot);
  return 0;
}
