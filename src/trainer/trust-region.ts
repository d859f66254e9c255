import {
  inRegionTolerance,
  meanTokenKl,
  type PolicyLoss,
  type RankBucketShift,
} from '../rl/index.js';
import type { TransformerLM } from '../nn/transformer.js';
import { clipGradientNorm } from '../optim/clip.js';
import type { RandomGenerator } from '../util/random.js';
import type { TeamBatch } from '../team/types.js';
import { captureSnapshot, interpolateParameters, restoreSnapshot } from './parameter-state.js';
import { collectUnitTokens, rowValues, toGrid, type UnitTokens } from './token-grid.js';
import type { LocalUnit } from './units.js';
import { EvidenceCollector, type CertificateEvidence } from './certificate-evidence.js';
import { ReferenceDistributions } from './reference-distributions.js';
import { gradientStep } from './gradient-step.js';
import type { TrustRegionOutcome } from './records.js';

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
 * which were never measured).
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
  for (const minibatch of minibatches(options, tokens)) {
    const step = gradientStep(
      unit.model,
      minibatch,
      rowValues(minibatch, options.advantages),
      settings.policyLoss,
      {
        currentLogProbs: () => {
          const grid = kept ? kept.logProbsGrid : meter.startingLogProbsGrid();
          return grid ? minibatchGrid(tokens, grid, minibatch) : null;
        },
        budgetBytes: options.activationBudgetBytes,
      },
    );
    losses.push(step.loss);
    clipFractions.push(step.clipFraction);
    const clipping = clipGradientNorm(parameters, settings.maxGradNorm);
    summary.gradientNorm = clipping.norm;
    unit.optimizer.update({ learningRate: unit.learningRate, gradientScale: clipping.scale });
    unit.optimizer.zeroGrad();
    summary.stepsTaken++;
    const measured = meter.measure();
    if (measured.kl <= unit.delta) {
      snapshot = captureSnapshot(parameters);
      kept = measured;
      continue;
    }
    // Out of region: back off and end the update.
    let accepted: Measurement | null = null;
    summary.lastStepScale = backOff(parameters, snapshot, settings.backoff, () => {
      const candidate = meter.measure();
      accepted = candidate.kl <= unit.delta ? candidate : null;
      return accepted !== null;
    });
    if (summary.lastStepScale === 0) summary.stepsUndone++;
    else kept = accepted;
    break;
  }
  return {
    summary: { ...summary, lossMean: meanOrZero(losses), clipFraction: meanOrZero(clipFractions) },
    kept,
  };
}

/**
 * The minibatch's [rows·length] grid of values from the whole batch's grid (a minibatch row is
 * its trajectory's row of the batch, its positions the same tokens in the same order).
 */
function minibatchGrid(
  tokens: UnitTokens,
  grid: Float32Array,
  minibatch: UnitTokens,
): Float32Array {
  const result = new Float32Array(minibatch.rows * minibatch.length);
  minibatch.rowTrajectories.forEach((trajectory, row) => {
    const source = tokens.rowTrajectories.indexOf(trajectory) * tokens.length;
    const width = Math.min(minibatch.length, tokens.length);
    result.set(grid.subarray(source, source + width), row * minibatch.length);
  });
  return result;
}

/**
 * The minibatches of `settings.epochs` epochs over the participating trajectories, each epoch
 * shuffled when it begins (lazily: an update that stops early draws no further shuffles). A
 * unit on a Tinker service draws its minibatches here too, from the same random stream.
 */
export function* minibatches(
  options: Pick<TrustRegionUpdateOptions, 'batch' | 'trajectories' | 'settings' | 'random'> & {
    unit: { agentIndices: readonly number[] };
  },
  tokens: UnitTokens,
): Generator<UnitTokens> {
  const { batch, unit, settings } = options;
  const participating = options.trajectories.filter((index) =>
    tokens.rowTrajectories.includes(index),
  );
  if (participating.length === 0 || tokens.totalTokens === 0) return;
  for (let epoch = 0; epoch < settings.epochs; epoch++) {
    const shuffled = options.random.shuffle([...participating]);
    const size = Math.ceil(shuffled.length / settings.minibatches);
    for (let start = 0; start < shuffled.length; start += size) {
      const minibatch = collectUnitTokens(
        batch,
        unit.agentIndices,
        shuffled.slice(start, start + size),
      );
      if (minibatch.totalTokens > 0) yield minibatch;
    }
  }
}

/** One exact-KL measurement of the current parameters, with the evidence gathered on the way. */
interface Measurement {
  kl: number;
  max: number;
  evidence: EvidenceCollector;
  /** [rows·length] log π_current of the sampled tokens (the fused gather), for the next step. */
  logProbsGrid: Float32Array;
}

/**
 * Exact token-level KL(π_old ‖ π_current) of a unit's tokens against its pre-update policy,
 * chunk by chunk within the memory budget of ReferenceDistributions.
 */
class KlMeter {
  private readonly reference: ReferenceDistributions;

  constructor(
    private readonly model: TransformerLM,
    private readonly tokens: UnitTokens,
    budgetBytes?: number,
  ) {
    this.reference = new ReferenceDistributions(model, tokens.items, budgetBytes);
  }

  /** log π_old of the unit's tokens as a [rows·length] grid, when it is cheap (see reference). */
  startingLogProbsGrid(): Float32Array | null {
    const flat = this.reference.startingLogProbs();
    return flat ? toGrid(this.tokens, flat) : null;
  }

  /** The mean and maximum token KL, and the certificate's evidence, of the current parameters. */
  measure(): Measurement {
    const { tokens } = this;
    const evidence = new EvidenceCollector(tokens, this.model.config.vocabSize, {
      rankShift: true,
    });
    for (const pair of this.reference.pairs()) evidence.add(pair);
    const summary = meanTokenKl({
      perTokenKl: evidence.evidence().perTokenKl,
      mask: tokens.mask,
      rows: tokens.rows,
    });
    return {
      kl: tokens.totalTokens > 0 ? summary.mean : 0,
      max: tokens.totalTokens > 0 ? summary.max : 0,
      evidence,
      logProbsGrid: toGrid(tokens, evidence.scoredLogProbs()),
    };
  }
}

function meanOrZero(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}

/**
 * Restores the last in-region parameters, or first tries fractions of the offending step.
 * Returns the scale kept (0 = fully undone).
 */
function backOff(
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
