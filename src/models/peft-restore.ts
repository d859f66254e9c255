import { loraLayers, type LoraLinear } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { FileFormatError } from '../util/errors.js';
import { linearModuleMappings } from './huggingface/modules.js';
import { patternValue, readPeftAdapter } from './peft.js';

/**
 * Sets the adapters already attached to `model` to the values of a PEFT adapter directory that
 * savePeftAdapter wrote from adapters of the same modules, ranks and scalings: a resumed run,
 * whose optimizer holds these very tensors, so none is replaced. The inverse of the save is
 * exact when the parts of a fused module share one scaling (always, for adapters made from one
 * `lora` config). Modules, ranks or scalings that differ are errors naming them.
 */
export async function restorePeftAdapterValues(
  model: TransformerLM,
  directory: string,
): Promise<void> {
  const { config, pairs } = await readPeftAdapter(model, directory);
  const adapters = loraLayers(model);
  const saved = new Map(pairs.map((pair) => [pair.mapping.hfModule, pair]));
  const problems: string[] = [];
  const restores: Array<() => void> = [];
  for (const mapping of linearModuleMappings(model.config)) {
    const parts = mapping.ourModules.map((module) => adapters.get(module));
    const present = parts.filter((part): part is LoraLinear => part !== undefined);
    const pair = saved.get(mapping.hfModule);
    if (present.length === 0 && !pair) continue;
    if (!pair || present.length === 0) {
      problems.push(
        `${mapping.hfModule}: ${pair ? 'the model has no adapter there' : 'the adapter has no weights for it'}`,
      );
      continue;
    }
    const reference = present[0]!;
    const rank = present.reduce((total, part) => total + part.rank, 0);
    const alpha = reference.rankStabilized
      ? reference.scaling * Math.sqrt(rank)
      : reference.scaling * rank;
    const savedAlpha = patternValue(config.alpha_pattern, mapping.hfModule) ?? config.lora_alpha;
    if (
      pair.a.shape[0] !== rank ||
      Math.abs(savedAlpha - alpha) > 1e-6 * alpha ||
      config.use_rslora !== reference.rankStabilized
    ) {
      problems.push(
        `${mapping.hfModule}: saved rank ${pair.a.shape[0]}, alpha ${savedAlpha}${config.use_rslora ? ' (rsLoRA)' : ''}, but the model's adapter has rank ${rank}, alpha ${alpha}${reference.rankStabilized ? ' (rsLoRA)' : ''}`,
      );
      continue;
    }
    restores.push(() => unfuseInto(parts, reference, pair.a.data, pair.b.data));
  }
  if (problems.length > 0)
    throw new FileFormatError(
      directory,
      `the adapter does not fit the model's adapters:\n  ${problems.join('\n  ')}`,
    );
  for (const restore of restores) restore();
}

/** The inverse of fuseAdapters: each part's A rows and its block of B (scaling folded out). */
function unfuseInto(
  parts: ReadonlyArray<LoraLinear | undefined>,
  reference: LoraLinear,
  a: Float32Array,
  b: Float32Array,
): void {
  const rank = a.length / reference.inFeatures;
  let column = 0;
  parts.forEach((part, index) => {
    if (!part) return;
    part.loraA.data.set(
      a.subarray(column * part.inFeatures, (column + part.rank) * part.inFeatures),
    );
    const ratio = part.scaling / reference.scaling;
    for (let row = 0; row < part.outFeatures; row++) {
      for (let inner = 0; inner < part.rank; inner++) {
        const value = b[(index * part.outFeatures + row) * rank + column + inner]!;
        part.loraB.data[row * part.rank + inner] = value / ratio;
      }
    }
    column += part.rank;
  });
}
