import os from 'node:os';
import { modelFeatures, type ModelConfig } from '../nn/config.js';
import { TeamtrError } from '../util/errors.js';
import { limitOf, memoryBoundBytes } from '../util/limits.js';

/** Parameters a model of this config holds (the shapes nn/transformer.ts allocates). */
export function parameterCount(config: ModelConfig): number {
  const { vocabSize, hiddenSize, heads, kvHeads, headDim, intermediateSize, layers } = config;
  const features = modelFeatures(config);
  const queryWidth = heads * headDim;
  const keyValueWidth = kvHeads * headDim;
  const normSize = features.norm === 'layernorm' ? 2 * hiddenSize : hiddenSize;
  const attention =
    hiddenSize * (queryWidth + 2 * keyValueWidth) +
    queryWidth * hiddenSize +
    (features.queryKeyValueBias ? queryWidth + 2 * keyValueWidth : 0) +
    (features.outputBias ? hiddenSize : 0) +
    (features.queryKeyNorm ? 2 * headDim : 0);
  const feedForward =
    hiddenSize * intermediateSize * (features.feedForward === 'swiglu' ? 3 : 2) +
    (features.outputBias ? intermediateSize + hiddenSize : 0);
  const embeddings =
    vocabSize * hiddenSize * (config.tieEmbeddings ? 1 : 2) +
    (features.positions === 'learned' ? config.maxPositions * hiddenSize : 0);
  return layers * (attention + feedForward + 2 * normSize) + embeddings + normSize;
}

/**
 * Refuses, before anything is allocated, a model whose float32 weights cannot fit in this
 * machine's memory, with the figure and the settings that make it so.
 */
export function checkModelFits(config: ModelConfig, source: string): void {
  const bytes = parameterCount(config) * 4;
  if (bytes <= memoryBoundBytes()) return;
  const share = Math.round(limitOf('memoryShare') * 100);
  const gigabytes = (value: number) => `${(value / 2 ** 30).toFixed(1)} GiB`;
  throw new TeamtrError(
    `${source}: this model needs ${gigabytes(bytes)} for its float32 weights, more than ${share}% of this machine's ${gigabytes(os.totalmem())} (TEAMTR_MEMORY_SHARE sets the share; layers ${config.layers}, hiddenSize ${config.hiddenSize}, intermediateSize ${config.intermediateSize}, vocabSize ${config.vocabSize}); check config.json, or use a smaller model`,
  );
}
