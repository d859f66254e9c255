import { inRegionTolerance, type RankBucketShift } from '../../rl/index.js';
import type { TeamBatch } from '../../team/types.js';
import type { RandomGenerator } from '../../util/random.js';
import type {
  CertificateEvidence,
  Estimates,
  Measurement,
  TrustRegionSettings,
  UpdateSession,
} from './engine.js';
import { unitEngine } from './engines.js';
import { MinibatchDraws } from './minibatches.js';
import { collectUnitTokens } from './token-grid.js';
import type { TrainableUnit } from './units.js';

export type { TrustRegionSettings } from './engine.js';

/** Where a trust-region update ended, and the steps it took to get there (update records). */
export interface TrustRegionOutcome {
  /**
   * Token-level KL(π_old ‖ π_new) of the accepted parameters over the agent's tokens (exact,
   * full vocabulary, unless the update record says it is estimated; docs/method.md §3).
   */
  kl: number;
  maxTokenKl: number;
  inRegion: boolean;
  stepsTaken: number;
  stepsUndone: number;
  /** Line-search scale of the last step (1 = taken whole, 0 = undone). */
  lastStepScale: number;
}

/** The accepted update; its CertificateEvidence is that of the accepted parameters. */
export interface TrustRegionResult extends CertificateEvidence, TrustRegionOutcome {
  lossMean: number;
  clipFraction: number;
  gradientNorm: number;
  /** How the update moved probability between the tokens π_old ranked 1st, 2nd, … */
  probabilityShiftByRank: RankBucketShift[];
  /**
   * log π_new of the unit's tokens in scoring order (tokens.items), from the same pass as the
   * evidence (the local engine's fused gather). Absent for a unit on a service.
   */
  scoredLogProbs?: Float32Array;
  /** Which quantities are estimates (a unit on a service); absent: all exact. */
  estimates?: Estimates;
}

export interface TrustRegionUpdateOptions {
  unit: TrainableUnit;
  batch: TeamBatch;
  /** Per-trajectory advantages for the loss. */
  advantages: ArrayLike<number>;
  /** Trajectories that take part (dynamic sampling drops the rest). */
  trajectories: readonly number[];
  settings: TrustRegionSettings;
  /** Exact-KL memory budget of a local unit (UpdatePlan). @default 64 MiB */
  distributionBudgetBytes?: number;
  /** Activation budget of a local unit's gradient steps (UpdatePlan). @default 512 MiB */
  activationBudgetBytes?: number;
}

const lineSearchScales = [0.5, 0.25, 0.125, 0.0625];

/**
 * The per-agent trust-region update (docs/method.md §3), on any engine (engine.ts): epochs of
 * clipped-surrogate steps over minibatches of the unit's own tokens; after every step the KL of
 * the whole batch against the pre-update policy is measured, and the first step that leaves the
 * region is backed off (line search along it, or undone), which ends the update. The accepted
 * parameters are always in region, and the evidence returned is that of their own measurement
 * (only parameters back at the start are measured again). The minibatches' shuffles are drawn
 * from `random` (the stage's stream, which the next update goes on drawing from).
 */
export async function trustRegionUpdate(
  options: TrustRegionUpdateOptions,
  random: RandomGenerator,
): Promise<TrustRegionResult> {
  const { unit, settings } = options;
  const delta = unit.delta;
  const tokens = collectUnitTokens(options.batch, unit.agentIndices);
  const update = await unitEngine(unit).beginUpdate({
    tokens,
    advantages: options.advantages,
    settings,
    delta,
    distributionBudgetBytes: options.distributionBudgetBytes,
    activationBudgetBytes: options.activationBudgetBytes,
  });
  const draws = new MinibatchDraws(options, tokens, random);
  const tally = new StepTally();
  let kept: Measurement | null = null; // null: the starting parameters, not measured
  for (let minibatch = draws.next(); minibatch; minibatch = draws.next()) {
    tally.stepped(await update.step(minibatch));
    const measured = await update.measure(draws.peek());
    if (measured.inRegion) {
      await update.keep();
      kept = measured;
      continue;
    }
    const backedOff = await backOff(update, settings.backoff);
    tally.backedOff(backedOff.scale);
    kept = backedOff.measured ?? kept;
    break;
  }
  draws.close();
  const final = kept ?? (await update.measure(null));
  return {
    ...final.evidence(),
    kl: final.kl,
    maxTokenKl: final.maxTokenKl,
    inRegion: final.kl <= delta + inRegionTolerance,
    ...tally.summary(),
    probabilityShiftByRank: final.probabilityShiftByRank(),
    scoredLogProbs: final.scoredLogProbs(),
    estimates: final.estimates,
  };
}

/**
 * Backs off a step that left the region: first fractions of it (line search, where the engine
 * can scale a step), else back to the last in-region parameters. `scale` 0: undone.
 */
async function backOff(
  update: UpdateSession,
  backoff: TrustRegionSettings['backoff'],
): Promise<{ scale: number; measured: Measurement | null }> {
  if (backoff === 'line-search' && update.scalesSteps)
    for (const scale of lineSearchScales) {
      await update.scaleStep(scale);
      const measured = await update.measure(null);
      if (measured.inRegion) return { scale, measured };
    }
  await update.undoStep();
  return { scale: 0, measured: null };
}

/** The steps of an update and their losses, as its record reports them. */
class StepTally {
  private stepsTaken = 0;
  private stepsUndone = 0;
  private lastStepScale = 1;
  private gradientNorm = 0;
  private readonly losses: number[] = [];
  private readonly clipFractions: number[] = [];

  stepped(step: { loss: number; clipFraction: number; gradientNorm: number }): void {
    this.losses.push(step.loss);
    this.clipFractions.push(step.clipFraction);
    this.gradientNorm = step.gradientNorm;
    this.stepsTaken++;
  }

  backedOff(scale: number): void {
    this.lastStepScale = scale;
    if (scale === 0) this.stepsUndone++;
  }

  summary() {
    return {
      stepsTaken: this.stepsTaken,
      stepsUndone: this.stepsUndone,
      lastStepScale: this.lastStepScale,
      lossMean: meanOrZero(this.losses),
      clipFraction: meanOrZero(this.clipFractions),
      gradientNorm: this.gradientNorm,
    };
  }
}

function meanOrZero(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}
