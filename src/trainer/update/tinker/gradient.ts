import { broadcastToTokens } from '../../../rl/index.js';
import type { TrustRegionSettings } from '../engine.js';
import { fromGrid, rowValues, toGrid, type UnitTokens } from '../token-grid.js';
import type { TinkerUnit } from '../units.js';
import { scoringDatum } from './agent.js';

/**
 * One minibatch's gradient accumulated on the service. `objective`: the run's policy loss of
 * the log-probs the service computes (forward), its gradient sent as cross-entropy weights —
 * the gradient a local step takes. `importance_sampling`: the built-in loss with A/T per token.
 */
export async function serviceGradient(
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
