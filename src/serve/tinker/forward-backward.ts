import type { TransformerLM } from '../../nn/transformer.js';
import { gatherLogProbs, noGrad, sumOfProducts, tidy } from '../../tensor/index.js';
import type { Datum, ForwardBackwardResult } from '../../tinker/types.js';
import { EngineUserError, lossCoefficients, type LossEvaluation } from './local-losses.js';

/**
 * `forward_backward` (and `forward`) on one model: the log-prob of every datum's target tokens
 * and, unless forwardOnly, the loss's gradient accumulated into the adapters. Losses are sums
 * over tokens, as the service defines them (local-losses.ts).
 */
export function forwardBackwardPass(
  model: TransformerLM,
  data: Datum[],
  lossFunction: string,
  forwardOnly: boolean,
): ForwardBackwardResult {
  if (data.length === 0) throw new EngineUserError('data: empty batch');
  const batch = packBatch(model, data);
  const run = () =>
    tidy(() => {
      const logits = model.forward(batch);
      const { logProbs } = gatherLogProbs(logits, batch.targets);
      const values = logProbs.data.slice();
      const evaluation: LossEvaluation = lossCoefficients(lossFunction, data, values);
      if (!forwardOnly) sumOfProducts(logProbs, evaluation.coefficients).backward();
      return { values, loss: evaluation.loss };
    });
  const { values, loss } = forwardOnly ? noGrad(run) : run();
  let offset = 0;
  const lossOutputs = data.map((datum) => {
    const count = datum.inputTokens.length;
    const part = Array.from(values.subarray(offset, offset + count));
    offset += count;
    return { logprobs: { dtype: 'float32' as const, data: part, shape: [count] } };
  });
  return { lossOutputs, metrics: { 'loss:sum': loss } };
}

/** The data right-padded into one batch; rows/targets list every input token, datum by datum. */
function packBatch(model: TransformerLM, data: Datum[]) {
  const lengths = data.map((datum) => datum.inputTokens.length);
  const length = lengths.reduce((longest, value) => Math.max(longest, value), 0);
  if (length > model.config.maxPositions)
    throw new EngineUserError(
      `a datum has ${length} tokens; the model's context is ${model.config.maxPositions}`,
    );
  const batch = data.length;
  const ids = new Int32Array(batch * length);
  const keyMask = new Float32Array(batch * length);
  const total = lengths.reduce((sum, value) => sum + value, 0);
  const rows = new Int32Array(total);
  const targets = new Int32Array(total);
  let cursor = 0;
  data.forEach((datum, row) => {
    const target = datum.lossInputs.target_tokens;
    if (!target || target.data.length !== datum.inputTokens.length)
      throw new EngineUserError(
        `data[${row}].loss_fn_inputs.target_tokens: needs one target per input token (${datum.inputTokens.length})`,
      );
    datum.inputTokens.forEach((token, position) => {
      checkToken(model, token, `data[${row}].model_input`);
      checkToken(model, target.data[position]!, `data[${row}].loss_fn_inputs.target_tokens`);
      ids[row * length + position] = token;
      keyMask[row * length + position] = 1;
      rows[cursor] = row * length + position;
      targets[cursor] = target.data[position]!;
      cursor++;
    });
  });
  return { ids, batch, length, keyMask, rows, targets };
}

export function checkToken(model: TransformerLM, token: number, where: string): void {
  if (!Number.isInteger(token) || token < 0 || token >= model.config.vocabSize)
    throw new EngineUserError(
      `${where}: token ${token} is outside the vocabulary (0–${model.config.vocabSize - 1})`,
    );
}
