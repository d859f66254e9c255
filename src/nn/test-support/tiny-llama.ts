/**
 * A two-layer Llama with grouped-query attention (4 query heads over 2 key/value heads) and an
 * odd vocabulary, small enough for exact comparisons on both backends in milliseconds.
 */
export const tinyLlamaConfig = {
  architecture: 'llama' as const,
  vocabSize: 29,
  hiddenSize: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 48,
  maxPositions: 64,
};
