import { attention, attentionBackward } from './reference/attention.js';
import {
  adamw,
  axpy,
  gelu,
  geluBackward,
  sumOfSquares,
  swiglu,
  swigluBackward,
} from './reference/elementwise.js';
import { matmul } from './reference/matmul.js';
import { layerNorm, layerNormBackward, rmsNorm, rmsNormBackward } from './reference/norms.js';
import { rope } from './reference/rope.js';
import {
  gatherLogProbs,
  gatherLogProbsBackward,
  logSoftmax,
  softmax,
} from './reference/softmax.js';
import type { KernelBackend } from './types.js';

/**
 * The pure-TypeScript reference backend: every kernel written for clarity, with float64
 * accumulation for row reductions. It runs everywhere and is what the native backend is
 * tested against; it is one to two orders of magnitude slower than the native one.
 */
export function createTypeScriptBackend(): KernelBackend {
  return {
    name: 'typescript',
    description: 'typescript (pure TypeScript reference kernels, 1 thread)',
    matmul,
    softmax,
    logSoftmax,
    gatherLogProbs,
    gatherLogProbsBackward,
    rmsNorm,
    rmsNormBackward,
    layerNorm,
    layerNormBackward,
    rope,
    attention,
    attentionBackward,
    swiglu,
    swigluBackward,
    gelu,
    geluBackward,
    adamw,
    sumOfSquares,
    axpy,
  };
}
