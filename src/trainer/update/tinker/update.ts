import { broadcastToTokens, inRegionTolerance } from '../../../rl/index.js';
import type { TeamBatch } from '../../../team/types.js';
import type { RandomGenerator } from '../../../util/random.js';
import type { CertificateEvidence } from '../local/certificate-evidence.js';
import { certifyEvidence, type CertificateSettings } from '../../certificate/certify.js';
import type { UpdateCertificate } from '../../records.js';
import { collectUnitTokens, fromGrid, rowValues, toGrid, type UnitTokens } from '../token-grid.js';
import { minibatches, type TrustRegionResult, type TrustRegionSettings } from '../trust-region.js';
import { scoringDatum } from './agent.js';
import { estimateTokenKl, type KlEstimate } from './kl-estimate.js';
import type { TinkerUnit } from './unit.js';

/** What a service-side update records beyond a local one: which parts are estimates. */
export interface ServiceEstimates {
  /** The KL, its maximum, the first-order penalty and the trajectory shift use k3 estimates. */
  klEstimated: true;
  /** Standard error of the estimated mean token KL (null with fewer than two trajectories). */
  klStandardError: number | null;
  /** The second-order penalty uses ½|r − 1| as the per-token total variation. */
  totalVariationEstimated: true;
}

export interface ServiceUpdate {
  result: TrustRegionResult;
  certificate: UpdateCertificate;
  estimates: ServiceEstimates;
}

/**
 * The per-agent trust-region update (docs/method.md §3) of a unit on a Tinker service: the same
 * minibatches as a local update (same random draws), each step's loss through forward_backward
 * (the objective as a custom loss, or the built-in importance_sampling loss) and optim_step
 * with the run's Adam settings and gradient clip; after each step the mean token KL of the whole
 * batch is estimated from the sampled tokens (k3, kl-estimate.ts). A step out of region is
 * undone by reloading the weights saved before it (parameters only, as locally: Adam's
 * moments are kept), which ends the update. Line search is not possible over the API: with
 * `backoff: line-search` a service unit undoes the step.
 */
export async function updateOnService(options: {
  unit: TinkerUnit;
  batch: TeamBatch;
  advantages: ArrayLike<number>;
  trajectories: readonly number[];
  settings: TrustRegionSettings;
  random: RandomGenerator;
  certificate: CertificateSettings;
  confidence: number;
  /** The stage's held-out batch, sampled by the team before the update (null: not measured). */
  heldOut: TeamBatch | null;
}): Promise<ServiceUpdate> {
  const { unit, batch } = options;
  const tokens = collectUnitTokens(batch, unit.agentIndices);
  const heldOutTokens = options.heldOut
    ? collectUnitTokens(options.heldOut, unit.agentIndices)
    : null;
  const heldOutReference = heldOutTokens ? await flatLogProbs(unit, heldOutTokens) : null;
  const reference = await flatLogProbs(unit, tokens);
  const { accepted, estimate, summary, losses, clipFractions } = await serviceSteps(
    unit,
    tokens,
    reference,
    options,
  );
  const evidence = serviceEvidence(tokens, accepted, estimate);
  const result: TrustRegionResult = {
    ...evidence,
    kl: estimate.mean,
    maxTokenKl: estimate.max,
    inRegion: estimate.mean <= unit.delta + inRegionTolerance,
    ...summary,
    lossMean: meanOrZero(losses),
    clipFraction: meanOrZero(clipFractions),
    // The service returns log-probs of given tokens only: no distributions to rank.
    probabilityShiftByRank: [],
  };
  const heldOut =
    options.heldOut && heldOutTokens && heldOutReference
      ? {
          batch: options.heldOut,
          evidence: await evidenceNow(unit, heldOutTokens, heldOutReference),
        }
      : null;
  return {
    result,
    certificate: certifyServiceUpdate(batch, evidence, options, heldOut),
    estimates: {
      klEstimated: true,
      klStandardError: estimate.standardError,
      totalVariationEstimated: true,
    },
  };
}

/**
 * The steps of one update on the service: the minibatches of a local update, each a gradient,
 * an optim_step, and the batch's estimated KL; the first step out of region is undone by
 * reloading the weights saved before it, which ends the update.
 */
async function serviceSteps(
  unit: TinkerUnit,
  tokens: UnitTokens,
  reference: Float32Array,
  options: Parameters<typeof updateOnService>[0],
) {
  const { agent } = unit;
  let accepted = reference;
  let estimate = estimateTokenKl(tokens, reference, reference);
  const summary = { stepsTaken: 0, stepsUndone: 0, lastStepScale: 1, gradientNorm: 0 };
  const losses: number[] = [];
  const clipFractions: number[] = [];
  for (const minibatch of minibatches(options, tokens)) {
    const before = await agent.saveWeights('step');
    const step = await serviceGradient(unit, minibatch, options);
    losses.push(step.loss);
    clipFractions.push(step.clipFraction);
    const metrics = await agent.model.optimStep({
      learningRate: unit.learningRate,
      beta1: unit.adam.beta1,
      beta2: unit.adam.beta2,
      epsilon: 1e-8,
      weightDecay: unit.adam.weightDecay,
      gradientClipNorm: options.settings.maxGradNorm,
    });
    agent.weightsChanged();
    summary.gradientNorm = metrics['optim/grad_norm'] ?? 0;
    summary.stepsTaken++;
    const current = await flatLogProbs(unit, tokens);
    const measured = estimateTokenKl(tokens, reference, current);
    if (measured.mean <= unit.delta) {
      accepted = current;
      estimate = measured;
      continue;
    }
    await agent.loadWeights(before, { optimizer: false });
    summary.stepsUndone++;
    summary.lastStepScale = 0;
    break;
  }
  return { accepted, estimate, summary, losses, clipFractions };
}

/** The evidence of `tokens` under the current weights against their `reference` log-probs. */
async function evidenceNow(
  unit: TinkerUnit,
  tokens: UnitTokens,
  reference: Float32Array,
): Promise<CertificateEvidence> {
  const current = await flatLogProbs(unit, tokens);
  return serviceEvidence(tokens, current, estimateTokenKl(tokens, reference, current));
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

/**
 * One minibatch's gradient accumulated on the service. `objective`: the run's policy loss of
 * the log-probs the service computes (forward), its gradient sent as cross-entropy weights —
 * the gradient a local step takes. `importance_sampling`: the built-in loss with A/T per token.
 */
async function serviceGradient(
  unit: TinkerUnit,
  minibatch: UnitTokens,
  options: { advantages: ArrayLike<number>; settings: TrustRegionSettings },
): Promise<{ loss: number; clipFraction: number }> {
  const rowAdvantages = rowValues(minibatch, options.advantages);
  return unit.agent.settings.loss === 'importance_sampling'
    ? importanceSamplingGradient(unit, minibatch, rowAdvantages)
    : objectiveGradient(unit, minibatch, rowAdvantages, options.settings);
}

/** The built-in importance_sampling loss: the old log-probs and A/T on each sampled token. */
async function importanceSamplingGradient(
  unit: TinkerUnit,
  minibatch: UnitTokens,
  rowAdvantages: Float64Array,
): Promise<{ loss: number; clipFraction: number }> {
  const grid = { mask: minibatch.mask, rows: minibatch.rows };
  const perToken = fromGrid(
    minibatch,
    broadcastToTokens({ perTrajectory: rowAdvantages, ...grid }),
  );
  let cursor = 0;
  const data = minibatch.items.map((item) => {
    const padding = new Array<number>(item.context.length - 1).fill(0);
    const old: number[] = [];
    const advantages: number[] = [];
    for (let offset = 0; offset < item.completion.length; offset++, cursor++) {
      old.push(minibatch.oldLogProbs[minibatch.gridIndex[cursor]!]!);
      advantages.push(perToken[cursor]! / minibatch.totalTokens);
    }
    const length = padding.length + old.length;
    return scoringDatum(item, {
      logprobs: { dtype: 'float32', data: [...padding, ...old], shape: [length] },
      advantages: { dtype: 'float32', data: [...padding, ...advantages], shape: [length] },
    });
  });
  const result = await unit.agent.model.forwardBackward(data, 'importance_sampling');
  return { loss: result.metrics['loss:sum'] ?? 0, clipFraction: 0 };
}

/** The run's objective as a custom loss: its gradient sent back as cross-entropy weights. */
async function objectiveGradient(
  unit: TinkerUnit,
  minibatch: UnitTokens,
  rowAdvantages: Float64Array,
  settings: TrustRegionSettings,
): Promise<{ loss: number; clipFraction: number }> {
  const grid = { mask: minibatch.mask, rows: minibatch.rows };
  let clipFraction = 0;
  const result = await unit.agent.model.forwardBackwardCustom(
    minibatch.items.map((item) => scoringDatum(item)),
    (logProbs) => {
      const flat = new Float32Array(minibatch.totalTokens);
      let cursor = 0;
      minibatch.items.forEach((item, index) => {
        const values = logProbs[index]!;
        flat.set(values.slice(values.length - item.completion.length), cursor);
        cursor += item.completion.length;
      });
      const surrogate = settings.policyLoss({
        logProbs: toGrid(minibatch, flat),
        oldLogProbs: minibatch.oldLogProbs,
        advantages: broadcastToTokens({ perTrajectory: rowAdvantages, ...grid }),
        ...grid,
      });
      clipFraction = surrogate.metrics.clipFraction;
      const gradient = fromGrid(minibatch, surrogate.gradLogProbs);
      cursor = 0;
      const gradients = minibatch.items.map((item, index) => {
        const full = new Array<number>(logProbs[index]!.length).fill(0);
        const offset = full.length - item.completion.length;
        for (let position = 0; position < item.completion.length; position++)
          full[offset + position] = gradient[cursor++]!;
        return full;
      });
      return { loss: surrogate.loss, gradients };
    },
  );
  return { loss: result.metrics['custom_loss:sum'] ?? 0, clipFraction };
}

/**
 * The certificate of certify.ts from what a service can give: the surrogate and off-policy
 * estimate are computed as locally (they need only sampled-token log-probs); the first-order
 * penalty and the trajectory shift use the k3 per-token KL, the second-order penalty ½|r − 1|
 * as per-token TV (both estimates); the shift of probability by rank needs whole distributions
 * and is empty.
 */
function certifyServiceUpdate(
  batch: TeamBatch,
  evidence: CertificateEvidence,
  options: { certificate: CertificateSettings; confidence: number },
  heldOut: { batch: TeamBatch; evidence: CertificateEvidence } | null,
): UpdateCertificate {
  return certifyEvidence({
    batch,
    evidence,
    settings: options.certificate,
    confidence: options.confidence,
    heldOut,
    probabilityShiftByRank: [],
  });
}

function meanOrZero(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}
