import { inRegionTolerance } from '../../rl/index.js';
import { clipGradientNorm } from '../../optim/clip.js';
import { gradientStep } from '../update/local/gradient-step.js';
import { measureKl } from '../update/local/kl-meter.js';
import { minibatches } from '../update/minibatches.js';
import {
  captureSnapshot,
  interpolateParameters,
  restoreSnapshot,
} from '../update/parameter-state.js';
import { ReferenceDistributions } from '../update/local/reference-distributions.js';
import { collectUnitTokens, rowValues } from '../update/token-grid.js';
import type { TrustRegionResult, TrustRegionUpdateOptions } from '../update/trust-region.js';
import { isOnService } from '../update/engines.js';
import type { LocalUnit } from '../update/units.js';
import type { RandomGenerator } from '../../util/random.js';

/**
 * The trust-region update as it ran before measurements shared the gradient steps' forward
 * passes: π_old from a pass of its own over every token, and after every step a measurement
 * with a pass of its own over every token, the next minibatch drawn only once it is in region,
 * and no context prefix computed once for the items that share it in those passes. The
 * gradient steps are the update's own (gradientStep, which runs a shared prompt once on models
 * that sum in one order: their gradients' last bits depend on it).
 * The reference that trustRegionUpdate must reproduce bit for bit (trust-region-passes.test.ts).
 */
export function separatePassesUpdate(
  options: TrustRegionUpdateOptions,
  random: RandomGenerator,
): TrustRegionResult {
  const { unit, settings } = options;
  if (isOnService(unit)) throw new Error('separatePassesUpdate: a local unit only');
  const tokens = collectUnitTokens(options.batch, unit.agentIndices);
  // Plain passes over whole items: no context prefix computed once for several.
  const reference = new ReferenceDistributions(
    unit.model,
    tokens.items,
    options.distributionBudgetBytes,
    undefined,
    { sharePrefixes: false },
  );
  const measure = () => measureKl(tokens, unit.model.config.vocabSize, reference.pairs());
  const parameters = unit.model.trainableParameters();
  let snapshot = captureSnapshot(parameters);
  let kept: ReturnType<typeof measure> | null = null;
  const summary = { stepsTaken: 0, stepsUndone: 0, lastStepScale: 1, gradientNorm: 0 };
  const losses: number[] = [];
  const clipFractions: number[] = [];
  for (const minibatch of minibatches(options, tokens, random)) {
    const step = gradientStep(
      unit.model,
      minibatch,
      rowValues(minibatch, options.advantages),
      settings.policyLoss,
      { budgetBytes: options.activationBudgetBytes },
    )!;
    losses.push(step.loss);
    clipFractions.push(step.clipFraction);
    const clipping = clipGradientNorm(parameters, settings.maxGradNorm);
    summary.gradientNorm = clipping.norm;
    unit.optimizer.update({ learningRate: unit.learningRate, gradientScale: clipping.scale });
    unit.optimizer.zeroGrad();
    summary.stepsTaken++;
    const measured = measure();
    if (measured.kl <= unit.delta) {
      snapshot = captureSnapshot(parameters);
      kept = measured;
      continue;
    }
    let accepted: ReturnType<typeof measure> | null = null;
    summary.lastStepScale = backOff(
      parameters,
      snapshot,
      settings.backoff === 'line-search',
      () => {
        const candidate = measure();
        accepted = candidate.kl <= unit.delta ? candidate : null;
        return accepted !== null;
      },
    );
    if (summary.lastStepScale === 0) summary.stepsUndone++;
    else kept = accepted;
    break;
  }
  const final = kept ?? measure();
  const mean = (values: number[]) =>
    values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
  return {
    ...final.evidence.evidence(),
    kl: final.kl,
    maxTokenKl: final.max,
    inRegion: final.kl <= unit.delta + inRegionTolerance,
    ...summary,
    lossMean: mean(losses),
    clipFraction: mean(clipFractions),
    probabilityShiftByRank: final.evidence.probabilityShiftByRank(),
    scoredLogProbs: final.evidence.scoredLogProbs(),
  };
}

/**
 * Restores the last in-region parameters, or first tries fractions of the offending step.
 * Returns the scale kept (0 = fully undone).
 */
function backOff(
  parameters: ReturnType<LocalUnit['model']['trainableParameters']>,
  snapshot: ReturnType<typeof captureSnapshot>,
  lineSearch: boolean,
  inRegion: () => boolean,
): number {
  if (lineSearch) {
    const stepEnd = parameters.map(({ tensor }) => tensor.data.slice());
    for (const scale of [0.5, 0.25, 0.125, 0.0625]) {
      interpolateParameters(parameters, snapshot, stepEnd, scale);
      if (inRegion()) return scale;
    }
  }
  restoreSnapshot(parameters, snapshot);
  return 0;
}
