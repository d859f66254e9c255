import type { ScoringItem } from '../../../nn/score.js';
import type { TeamBatch } from '../../../team/types.js';
import { TeamtrError } from '../../../util/errors.js';
import {
  withinRadius,
  type CertificateEvidence,
  type EngineSnapshot,
  type Measurement,
  type SaveUnitOptions,
  type StepOutcome,
  type UnitEngine,
  type UpdatePlan,
  type UpdateSession,
} from '../engine.js';
import { collectUnitTokens, toGrid, type UnitTokens } from '../token-grid.js';
import type { TinkerUnit } from '../units.js';
import { restoreTinkerUnitCheckpoint, saveTinkerUnitCheckpoint } from './checkpoint.js';
import { serviceGradient } from './gradient.js';
import { estimateTokenKl, type KlEstimate } from './kl-estimate.js';

/**
 * A unit whose LoRA model lives on a Tinker service (docs/method.md §3, "Agents on a Tinker
 * service"). Steps go through forward_backward and optim_step with the run's Adam settings and
 * gradient clip. The service returns log-probs of given tokens only, not whole distributions,
 * so the KL, the total variation and the penalties built on them are estimated from the
 * sampled tokens (k3, kl-estimate.ts), and there is no shift of probability by rank.
 */
export class TinkerEngine implements UnitEngine {
  readonly keepsSampledHiddenStates = false;

  constructor(private readonly unit: TinkerUnit) {}

  completionLogProbs(items: readonly ScoringItem[]): Promise<Float32Array[]> {
    return this.unit.agent.completionLogProbs(items);
  }

  async beginUpdate(plan: UpdatePlan): Promise<UpdateSession> {
    return new TinkerUpdate(this.unit, plan, await flatLogProbs(this.unit, plan.tokens));
  }

  async holdOut(batch: TeamBatch) {
    const tokens = collectUnitTokens(batch, this.unit.agentIndices);
    const reference = await flatLogProbs(this.unit, tokens);
    return {
      after: async (): Promise<CertificateEvidence> => {
        const current = await flatLogProbs(this.unit, tokens);
        return serviceEvidence(tokens, current, estimateTokenKl(tokens, reference, current));
      },
    };
  }

  async snapshot(): Promise<EngineSnapshot> {
    const { agent } = this.unit;
    const weightsPath = await agent.saveWeights('snapshot');
    return { restore: () => agent.loadWeights(weightsPath, { optimizer: true }) };
  }

  save(directory: string, options: SaveUnitOptions): Promise<void> {
    return saveTinkerUnitCheckpoint(directory, this.unit, options.tokenizer);
  }

  load(directory: string): Promise<void> {
    return restoreTinkerUnitCheckpoint(directory, this.unit);
  }

  dispose(): void {
    this.unit.agent.close();
  }
}

/**
 * An update on the service. Before a step leaves the kept weights it saves them there
 * (save_weights); undoing reloads them, parameters only, as locally (Adam's moments are kept).
 * Weights can only be stepped or reloaded over the API, not scaled: with `backoff: line-search`
 * a service unit undoes the step.
 */
class TinkerUpdate implements UpdateSession {
  readonly scalesSteps = false;
  /** Versions of the weights: 0 at the start, a new one per step. */
  private version = 0;
  private versions = 0;
  private kept = 0;
  /** The kept weights as saved on the service, and which version they are. */
  private saved: { weightsPath: string; version: number } | null = null;
  private readonly start: Measurement;

  constructor(
    private readonly unit: TinkerUnit,
    private readonly plan: UpdatePlan,
    private readonly reference: Float32Array,
  ) {
    this.start = this.measurement(reference, estimateTokenKl(plan.tokens, reference, reference));
  }

  async step(minibatch: UnitTokens): Promise<StepOutcome> {
    const { agent, adam, learningRate } = this.unit;
    if (this.version === this.kept && this.saved?.version !== this.kept)
      this.saved = { weightsPath: await agent.saveWeights('step'), version: this.kept };
    const step = await serviceGradient(this.unit, minibatch, this.plan);
    const metrics = await agent.model.optimStep({
      learningRate,
      beta1: adam.beta1,
      beta2: adam.beta2,
      epsilon: 1e-8,
      weightDecay: adam.weightDecay,
      gradientClipNorm: this.plan.settings.maxGradNorm,
    });
    agent.weightsChanged();
    this.version = ++this.versions;
    return { ...step, gradientNorm: metrics['optim/grad_norm'] ?? 0 };
  }

  async measure(): Promise<Measurement> {
    if (this.version === 0) return this.start;
    const current = await flatLogProbs(this.unit, this.plan.tokens);
    return this.measurement(current, estimateTokenKl(this.plan.tokens, this.reference, current));
  }

  async keep(): Promise<void> {
    this.kept = this.version;
  }

  async scaleStep(): Promise<void> {
    throw new TeamtrError(
      `agent "${this.unit.name}" trains on a Tinker service, whose weights can be stepped or reloaded but not scaled; its back-off undoes the step`,
    );
  }

  async undoStep(): Promise<void> {
    if (this.version === this.kept) return;
    await this.unit.agent.loadWeights(this.saved!.weightsPath, { optimizer: false });
    this.version = this.kept;
  }

  private measurement(logProbs: Float32Array, estimate: KlEstimate): Measurement {
    const { tokens, delta } = this.plan;
    return {
      kl: estimate.mean,
      maxTokenKl: estimate.max,
      inRegion: withinRadius(estimate.mean, delta),
      evidence: () => serviceEvidence(tokens, logProbs, estimate),
      probabilityShiftByRank: () => [],
      scoredLogProbs: () => undefined,
      estimates: {
        klEstimated: true,
        klStandardError: estimate.standardError,
        totalVariationEstimated: true,
      },
    };
  }
}

/** Log-probs of the unit's tokens under the service's current weights, in flat scoring order. */
async function flatLogProbs(unit: TinkerUnit, tokens: UnitTokens): Promise<Float32Array> {
  const perItem = await unit.agent.completionLogProbs(tokens.items);
  const flat = new Float32Array(tokens.totalTokens);
  let cursor = 0;
  for (const values of perItem) {
    flat.set(values, cursor);
    cursor += values.length;
  }
  return flat;
}

function serviceEvidence(
  tokens: UnitTokens,
  logProbs: Float32Array,
  estimate: KlEstimate,
): CertificateEvidence {
  return {
    tokens,
    newLogProbs: toGrid(tokens, logProbs),
    perTokenKl: toGrid(tokens, estimate.perToken),
    perTokenTotalVariation: toGrid(tokens, estimate.perTokenTotalVariation),
  };
}
