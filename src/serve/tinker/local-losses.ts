import type { Datum } from '../../tinker/types.js';

/**
 * The service's built-in losses as the local engine computes them. Each is a sum over tokens
 * of a function of the token's log-prob ℓ_t, so its gradient is Σ_t c_t ∇ℓ_t: the engine
 * backpropagates Σ_t c_t ℓ_t with the coefficients c_t computed here (exact, since the
 * coefficients are constants of the batch), and reports the loss value itself.
 *
 *   cross_entropy        L = −Σ_t w_t ℓ_t                         c_t = −w_t
 *   importance_sampling  L = −Σ_t exp(ℓ_t − ℓ_t^old) A_t          c_t = −exp(ℓ_t − ℓ_t^old) A_t
 *
 * (w = `weights`, default 1; ℓ^old = `logprobs` recorded when sampling; A = `advantages`.)
 */

export interface LossEvaluation {
  loss: number;
  /** [totalTokens], datum by datum. */
  coefficients: Float32Array;
}

/** A request the engine refuses; reported with `category: user` (retrying will not help). */
export class EngineUserError extends Error {}

function input(datum: Datum, index: number, name: string, fallback: number | null): number[] {
  const tensor = datum.lossInputs[name];
  const length = datum.inputTokens.length;
  if (!tensor) {
    if (fallback === null)
      throw new EngineUserError(`data[${index}].loss_fn_inputs.${name} is required for this loss`);
    return new Array<number>(length).fill(fallback);
  }
  if (tensor.data.length !== length)
    throw new EngineUserError(
      `data[${index}].loss_fn_inputs.${name} has ${tensor.data.length} values; the datum has ${length} tokens`,
    );
  return tensor.data;
}

export function lossCoefficients(
  lossFunction: string,
  data: readonly Datum[],
  logProbs: Float32Array,
): LossEvaluation {
  const coefficients = new Float32Array(logProbs.length);
  let loss = 0;
  let cursor = 0;
  data.forEach((datum, index) => {
    if (lossFunction === 'cross_entropy') {
      const weights = input(datum, index, 'weights', 1);
      weights.forEach((weight) => {
        loss -= weight * logProbs[cursor]!;
        coefficients[cursor++] = -weight;
      });
    } else if (lossFunction === 'importance_sampling') {
      const old = input(datum, index, 'logprobs', null);
      const advantages = input(datum, index, 'advantages', null);
      advantages.forEach((advantage, position) => {
        const ratio = Math.exp(logProbs[cursor]! - old[position]!);
        loss -= ratio * advantage;
        coefficients[cursor++] = -ratio * advantage;
      });
    } else {
      throw new EngineUserError(
        `loss_fn "${lossFunction}" is not implemented by the local engine (available: cross_entropy, importance_sampling; other losses can be sent as cross_entropy weights, as forward_backward_custom does)`,
      );
    }
  });
  return { loss, coefficients };
}
