import { loraLayers } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { noGrad, tidy } from '../tensor/index.js';
import { FileFormatError } from '../util/errors.js';
import {
  bfloat16Value,
  firstNonFinite,
  firstNonFiniteBfloat16,
  firstNonFiniteValue,
  type NonFiniteValue,
} from '../util/finite.js';

/**
 * Weights that load without complaint and then sample garbage: NaN or ±Inf (a damaged file, a
 * diverged run), and finite values large enough that the forward pass overflows float32 (a
 * finalNorm of 3e38, a LoRA scaling of 1e307 from lora_alpha 1e308). Every command that reads
 * weights refuses them at load, naming the tensor, instead of serving `<pad>`s with exit 0.
 */

const damaged =
  'the file is damaged or came from a diverged run — use another checkpoint (an earlier one of the run, if it diverged)';

/**
 * The first parameter (LoRA factors included) holding NaN or ±Inf, or null; with `trainable`,
 * of the parameters that train only (all an update can change). Weights stored in bfloat16 are
 * checked on their bits.
 */
export function nonFiniteParameter(
  model: TransformerLM,
  which: 'all' | 'trainable' = 'all',
): NonFiniteValue | null {
  const parameters = which === 'all' ? model.namedParameters() : model.trainableParameters();
  for (const { name, tensor } of parameters) {
    const bits = tensor.bfloat16;
    if (!bits) {
      const found = firstNonFiniteValue([{ name, data: tensor.data }]);
      if (found) return found;
      continue;
    }
    const index = firstNonFiniteBfloat16(bits);
    if (index >= 0) return { name, index, value: bfloat16Value(bits[index]!) };
  }
  return null;
}

/** NaN or ±Inf in any parameter (LoRA factors included), or a scaling beyond float32. */
export function assertFiniteParameters(model: TransformerLM, source: string): void {
  const found = nonFiniteParameter(model);
  if (found)
    throw new FileFormatError(
      source,
      `weight "${found.name}" holds a non-finite value (${found.value} at element ${found.index}); ${damaged}`,
    );
  for (const [path, adapter] of loraLayers(model))
    if (!Number.isFinite(Math.fround(adapter.scaling)))
      throw new FileFormatError(
        source,
        `the LoRA adapter of "${path}" has a scaling of ${adapter.scaling} (lora_alpha / r), beyond float32's range; check lora_alpha in adapter_config.json`,
      );
}

/**
 * Runs the model once on a few tokens and refuses it when the logits are not finite, naming the
 * parameter (or LoRA adapter) with the largest effect: finite weights can still overflow.
 */
export function assertForwardFinite(model: TransformerLM, source: string): void {
  const length = Math.min(4, model.config.maxPositions);
  const ids = Int32Array.from({ length }, (_, index) => index % model.config.vocabSize);
  const finite = noGrad(() =>
    tidy(() => {
      return firstNonFinite(model.forward({ ids, batch: 1, length }).data) < 0;
    }),
  );
  if (finite) return;
  throw new FileFormatError(
    source,
    `the model's forward pass overflows float32 on a ${length}-token probe (its logits are not finite); the largest ${largestWeight(model)}; ${damaged}`,
  );
}

/** The parameter or LoRA adapter of largest magnitude, in words. */
function largestWeight(model: TransformerLM): string {
  let best = { magnitude: -1, text: '' };
  for (const { name, tensor } of model.namedParameters()) {
    const data = tensor.data;
    for (let index = 0; index < data.length; index++) {
      const magnitude = Math.abs(data[index]!);
      if (magnitude > best.magnitude)
        best = { magnitude, text: `weight is "${name}" (${data[index]} at element ${index})` };
    }
  }
  for (const [path, adapter] of loraLayers(model))
    if (Math.abs(adapter.scaling) > best.magnitude)
      best = {
        magnitude: Math.abs(adapter.scaling),
        text: `factor is the scaling ${adapter.scaling} of the LoRA adapter of "${path}" (lora_alpha / r)`,
      };
  return best.text;
}
