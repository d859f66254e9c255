export {
  Tensor,
  tensor,
  zeros,
  full,
  scalar,
  parameter,
  noGrad,
  isGradientEnabled,
  backwardFrom,
  shapeSize,
  formatShape,
} from './tensor.js';
export {
  tidy,
  keep,
  allocate,
  allocateZeroed,
  release,
  clearPool,
  memoryStatistics,
  resetMemoryPeak,
  timeZeroFilling,
} from './memory.js';
export * from './ops/elementwise.js';
export * from './ops/reduce.js';
export * from './ops/shape.js';
export * from './ops/matmul.js';
export * from './ops/activation.js';
export * from './ops/scoring.js';
export * from './ops/normalization.js';
export * from './ops/embedding.js';
export * from './ops/attention.js';
export * from './ops/gather.js';
