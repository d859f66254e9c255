import { broadcastToTokens, meanTokenKl, tokenKl, type PolicyLoss } from '../rl/index.js';
import { completionLogDistributions, scoreCompletions } from '../nn/score.js';
import type { TransformerLM } from '../nn/transformer.js';
import { clipGradientNorm } from '../optim/clip.js';
import { tidy } from '../tensor/index.js';
import type { RandomGenerator } from '../util/random.js';
import type { TeamBatch } from '../team/types.js';
import { captureSnapshot, interpolateParameters, restoreSnapshot } from './parameter-state.js';
import { collectUnitTokens, fromGrid, rowValues, toGrid, type UnitTokens } from './token-grid.js';
import type { TrainableUnit } from './units.js';

/** How an update runs; the radius δ and the learning rate are the unit's own. */
export interface TrustRegionSettings {
  epochs: number;
  minibatches: number;
  backoff: 'restore' | 'line-search';
  maxGradNorm: number;
  /** The objective's loss (rl/objectives) with its settings. */
  policyLoss: PolicyLoss;
}

export interface TrustRegionResult {
  tokens: UnitTokens;
  /** Token-level KL(π_old ‖ π_new) of the accepted parameters (TEAMTR.md §3). */
  kl: number;
  maxTokenKl: number;
  /** [rows·length] exact per-token KL of the accepted parameters. */
  perTokenKl: Float32Array;
  /** [rows·length] log π_new of the sampled tokens under the accepted parameters. */
  newLogProbs: Float32Array;
  inRegion: boolean;
  stepsTaken: number;
  stepsUndone: number;
  /** Line-search scale of the last step (1 = taken whole, 0 = undone). */
  lastStepScale: number;
  lossMean: number;
  clipFraction: number;
  gradientNorm: number;
  /** [tokens, vocab] π_old, cached before the first step (for diagnostics). */
  referenceDistributions: Float32Array;
  /** [tokens, vocab] π_new of the accepted parameters. */
  finalDistributions: Float32Array;
}

const lineSearchScales = [0.5, 0.25, 0.125, 0.0625];

/**
 * The per-agent trust-region update (TEAMTR.md §3): clipped-surrogate epochs over minibatches
 * of the unit's own tokens; after every optimizer step the exact token-level KL against the
 * pre-update policy is measured over the whole batch, and a step that leaves the region is
 * backtracked along its direction (line search) or undone, which ends the update. The
 * accepted parameters are therefore always in region.
 */
export function trustRegionUpdate(options: {
  unit: TrainableUnit;
  batch: TeamBatch;
  /** Per-trajectory advantages for the loss. */
  advantages: ArrayLike<number>;
  /** Trajectories that take part (dynamic sampling drops the rest). */
  trajectories: readonly number[];
  settings: TrustRegionSettings;
  random: RandomGenerator;
}): TrustRegionResult {
  const { unit, batch, settings } = options;
  const { model, optimizer } = unit;
  const parameters = model.trainableParameters();
  const all = collectUnitTokens(batch, unit.agentIndices);
  const vocab = model.config.vocabSize;
  const reference = completionLogDistributions(model, all.items);
  const measure = (): {
    kl: number;
    max: number;
    perToken: Float32Array;
    distributions: Float32Array;
  } => {
    const distributions = completionLogDistributions(model, all.items);
    const flat = tokenKl({
      oldLogProbsFull: reference,
      newLogProbsFull: distributions,
      positions: all.totalTokens,
      vocab,
    });
    const perToken = toGrid(all, flat);
    const summary = meanTokenKl({ perTokenKl: perToken, mask: all.mask, rows: all.rows });
    return {
      kl: all.totalTokens > 0 ? summary.mean : 0,
      max: all.totalTokens > 0 ? summary.max : 0,
      perToken,
      distributions,
    };
  };
  let snapshot = captureSnapshot(parameters);
  let stepsTaken = 0;
  let stepsUndone = 0;
  let lastStepScale = 1;
  let inRegion = true;
  const losses: number[] = [];
  const clipFractions: number[] = [];
  let gradientNorm = 0;
  const participating = options.trajectories.filter((index) => all.rowTrajectories.includes(index));
  let stopped = participating.length === 0 || all.totalTokens === 0;
  for (let epoch = 0; epoch < settings.epochs && !stopped; epoch++) {
    const shuffled = options.random.shuffle([...participating]);
    const size = Math.ceil(shuffled.length / settings.minibatches);
    for (let start = 0; start < shuffled.length && !stopped; start += size) {
      const minibatch = collectUnitTokens(
        batch,
        unit.agentIndices,
        shuffled.slice(start, start + size),
      );
      if (minibatch.totalTokens === 0) continue;
      const step = gradientStep(
        model,
        minibatch,
        rowValues(minibatch, options.advantages),
        settings,
      );
      losses.push(step.loss);
      clipFractions.push(step.clipFraction);
      const clipping = clipGradientNorm(parameters, settings.maxGradNorm);
      gradientNorm = clipping.norm;
      optimizer.update({ learningRate: unit.learningRate, gradientScale: clipping.scale });
      optimizer.zeroGrad();
      stepsTaken++;
      if (measure().kl <= unit.delta) {
        snapshot = captureSnapshot(parameters);
        continue;
      }
      // Out of region: back off and end the update.
      stopped = true;
      lastStepScale = backOff(
        parameters,
        snapshot,
        settings.backoff,
        () => measure().kl <= unit.delta,
      );
      if (lastStepScale === 0) stepsUndone++;
    }
  }
  const final = measure();
  inRegion = final.kl <= unit.delta + 1e-9;
  const newLogProbs = gatherTakenLogProbs(all, final.distributions, vocab);
  return {
    tokens: all,
    kl: final.kl,
    maxTokenKl: final.max,
    perTokenKl: final.perToken,
    newLogProbs,
    inRegion,
    stepsTaken,
    stepsUndone,
    lastStepScale,
    lossMean: losses.length ? losses.reduce((a, b) => a + b, 0) / losses.length : 0,
    clipFraction: clipFractions.length
      ? clipFractions.reduce((a, b) => a + b, 0) / clipFractions.length
      : 0,
    gradientNorm,
    referenceDistributions: reference,
    finalDistributions: final.distributions,
  };
}

/** Forward, the objective's loss (pure, from src/rl), and its gradient injected into the graph. */
function gradientStep(
  model: TransformerLM,
  tokens: UnitTokens,
  rowAdvantages: Float64Array,
  settings: TrustRegionSettings,
): { loss: number; clipFraction: number } {
  return tidy(() => {
    const scores = scoreCompletions(model, tokens.items);
    const surrogate = settings.policyLoss({
      logProbs: toGrid(tokens, scores.logProbs.data),
      oldLogProbs: tokens.oldLogProbs,
      advantages: broadcastToTokens({
        perTrajectory: rowAdvantages,
        mask: tokens.mask,
        rows: tokens.rows,
      }),
      mask: tokens.mask,
      rows: tokens.rows,
    });
    scores.logProbs.backward(fromGrid(tokens, surrogate.gradLogProbs));
    return { loss: surrogate.loss, clipFraction: surrogate.metrics.clipFraction };
  });
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

/** log π(token) of each sampled token, from full log-distributions, as a grid. */
function gatherTakenLogProbs(
  tokens: UnitTokens,
  distributions: Float32Array,
  vocab: number,
): Float32Array {
  const flat = new Float32Array(tokens.totalTokens);
  let cursor = 0;
  for (const item of tokens.items) {
    for (const token of item.completion) {
      flat[cursor] = distributions[cursor * vocab + token]!;
      cursor++;
    }
  }
  return toGrid(tokens, flat);
}
