import type { NamedParameter } from '../../../nn/module.js';
import { scoreToArrays, type ScoringItem } from '../../../nn/score.js';
import { sumsInOneOrder } from '../../../nn/shared-prefix-scoring.js';
import { clipGradientNorm } from '../../../optim/clip.js';
import type { TeamBatch } from '../../../team/types.js';
import {
  withinRadius,
  type EngineSnapshot,
  type Measurement,
  type SaveUnitOptions,
  type StepOutcome,
  type UnitEngine,
  type UpdatePlan,
  type UpdateSession,
} from '../engine.js';
import {
  captureSnapshot,
  interpolateParameters,
  restoreSnapshot,
  type ParameterSnapshot,
} from '../parameter-state.js';
import { rowValues, type UnitTokens } from '../token-grid.js';
import type { LocalUnit } from '../units.js';
import { HeldOutEvidence } from './certificate-evidence.js';
import { gradientStep, type StepForward } from './gradient-step.js';
import { KlMeter, type KlMeasurement } from './kl-meter.js';
import { restoreUnitCheckpoint, saveUnitCheckpoint } from './unit-checkpoint.js';

/** A unit whose model and optimizer are in this process: every quantity is exact. */
export class LocalEngine implements UnitEngine {
  constructor(private readonly unit: LocalUnit) {}

  get keepsSampledHiddenStates(): boolean {
    return sumsInOneOrder(this.unit.model);
  }

  async completionLogProbs(items: readonly ScoringItem[]): Promise<Float32Array[]> {
    return scoreToArrays(this.unit.model, items).map((score) => score.logProbs);
  }

  async beginUpdate(plan: UpdatePlan): Promise<UpdateSession> {
    return new LocalUpdate(this.unit, plan);
  }

  async holdOut(batch: TeamBatch) {
    const evidence = new HeldOutEvidence(this.unit.model, batch, this.unit.agentIndices);
    return { after: async () => evidence.after() };
  }

  async snapshot(): Promise<EngineSnapshot> {
    const { model, optimizer } = this.unit;
    const parameters = captureSnapshot(model.trainableParameters());
    const state = optimizer.stateDict();
    return {
      restore: async () => {
        restoreSnapshot(model.trainableParameters(), parameters);
        optimizer.loadStateDict(state);
      },
    };
  }

  save(directory: string, options: SaveUnitOptions): Promise<void> {
    return saveUnitCheckpoint(directory, this.unit, options);
  }

  load(directory: string): Promise<void> {
    return restoreUnitCheckpoint(directory, this.unit);
  }

  dispose(): void {
    this.unit.model.destroy();
  }
}

/**
 * An update of a local unit. Measuring parameters and the next step's forward pass see the same
 * parameters, so they share it: `measure(next)` runs that forward pass (with gradients), the
 * exact KL takes the minibatch's hidden states from it and runs the layers only over the other
 * tokens, and the step's backward pass follows only if the parameters are in region (else its
 * graph is dropped); the `step` that follows finds its gradient ready. π_old takes the first
 * step's forward pass the same way. A step too large for the activation budget runs in
 * micro-batches, each backward right after its forward, and the measurement then decides whether
 * the accumulated gradient is kept (gradient-step.ts). No number changes.
 */
class LocalUpdate implements UpdateSession {
  readonly scalesSteps = true;
  private readonly parameters: NamedParameter[];
  private readonly meter: KlMeter;
  /** The parameters a back-off returns to. */
  private kept: ParameterSnapshot;
  /** The parameters at the end of the step being backed off (for a line search along it). */
  private stepEnd: Float32Array[] | null = null;
  /** A gradient already accumulated for the next step, on `minibatch`. */
  private prepared: { minibatch: UnitTokens; loss: number; clipFraction: number } | null = null;

  constructor(
    private readonly unit: LocalUnit,
    private readonly plan: UpdatePlan,
  ) {
    this.meter = new KlMeter(unit.model, plan.tokens, plan.distributionBudgetBytes);
    this.parameters = unit.model.trainableParameters();
    this.kept = captureSnapshot(this.parameters);
  }

  async step(minibatch: UnitTokens): Promise<StepOutcome> {
    const prepared = this.prepared?.minibatch === minibatch ? this.prepared : null;
    if (!prepared) this.dropPrepared();
    this.prepared = null;
    const gradient =
      prepared ??
      this.gradient(minibatch, (forward) => {
        if (!this.meter.isStarted) this.meter.start({ tokens: minibatch, hidden: forward.hidden });
        return true;
      })!;
    const clipping = clipGradientNorm(this.parameters, this.plan.settings.maxGradNorm);
    const { optimizer, learningRate } = this.unit;
    optimizer.update({ learningRate, gradientScale: clipping.scale });
    optimizer.zeroGrad();
    this.stepEnd = null;
    return {
      loss: gradient.loss,
      clipFraction: gradient.clipFraction,
      gradientNorm: clipping.norm,
    };
  }

  async measure(next: UnitTokens | null): Promise<Measurement> {
    if (!next) return this.measurement(this.meter.measure());
    let measured: Measurement | null = null;
    const gradient = this.gradient(next, (forward) => {
      const shared = { tokens: next, hidden: forward.hidden };
      if (!this.meter.isStarted) this.meter.start(shared);
      measured = this.measurement(this.meter.measure(shared));
      return measured.inRegion;
    });
    if (gradient) this.prepared = { minibatch: next, ...gradient };
    return measured!;
  }

  async keep(): Promise<void> {
    this.kept = captureSnapshot(this.parameters);
    this.stepEnd = null;
  }

  async scaleStep(scale: number): Promise<void> {
    this.dropPrepared();
    this.stepEnd ??= this.parameters.map(({ tensor }) => tensor.data.slice());
    interpolateParameters(this.parameters, this.kept, this.stepEnd, scale);
  }

  async undoStep(): Promise<void> {
    this.dropPrepared();
    restoreSnapshot(this.parameters, this.kept);
    this.stepEnd = null;
  }

  private gradient(minibatch: UnitTokens, afterForward: (forward: StepForward) => boolean) {
    return gradientStep(
      this.unit.model,
      minibatch,
      rowValues(minibatch, this.plan.advantages),
      this.plan.settings.policyLoss,
      { budgetBytes: this.plan.activationBudgetBytes, afterForward },
    );
  }

  /** A gradient prepared for a step that will not be taken is dropped. */
  private dropPrepared(): void {
    if (this.prepared) this.unit.optimizer.zeroGrad();
    this.prepared = null;
  }

  private measurement({ kl, max, evidence }: KlMeasurement): Measurement {
    return {
      kl,
      maxTokenKl: max,
      inRegion: withinRadius(kl, this.plan.delta),
      evidence: () => evidence.evidence(),
      probabilityShiftByRank: () => evidence.probabilityShiftByRank(),
      scoredLogProbs: () => evidence.scoredLogProbs(),
    };
  }
}
