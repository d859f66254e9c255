import { attention, attentionBackward } from './reference/attention.js';
import { compareLogDistributions } from './reference/distribution-comparison.js';
import {
  adamw,
  addScaled,
  axpy,
  gelu,
  geluBackward,
  sumOfSquares,
  swiglu,
  swigluBackward,
} from './reference/elementwise.js';
import { matmul } from './reference/matmul.js';
import { matmulBfloat16, matmulFixedOrder, matmulGemmOrder } from './reference/matmul-bfloat16.js';
import {
  addRmsNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormBackward,
} from './reference/norms.js';
import { rope } from './reference/rope.js';
import { sampleRows } from './reference/sampling.js';
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
    matmulBfloat16,
    matmulFixedOrder,
    matmulGemmOrder,
    // The reference functions of the elementwise and softmax kernels take positional arguments.
    softmax: ({ input, output, rows, columns }) => softmax(input, output, rows, columns),
    logSoftmax: ({ input, output, rows, columns }) => logSoftmax(input, output, rows, columns),
    gatherLogProbs,
    gatherLogProbsBackward,
    compareLogDistributions,
    sampleRows,
    rmsNorm,
    rmsNormBackward,
    layerNorm,
    layerNormBackward,
    rope,
    attention,
    attentionBackward,
    swiglu: ({ gate, up, output }) => swiglu(gate, up, output),
    swigluBackward: ({ gate, up, gradOutput, gradGate, gradUp, beta }) =>
      swigluBackward(gate, up, gradOutput, gradGate, gradUp, beta),
    gelu: ({ input, output }) => gelu(input, output),
    geluBackward: ({ input, gradOutput, gradInput }) => geluBackward(input, gradOutput, gradInput),
    adamw,
    sumOfSquares: ({ input }) => sumOfSquares(input),
    axpy: ({ alpha, x, y, beta }) => axpy(alpha, x, y, beta),
    addScaled: ({ a, b, scale, output }) => addScaled(a, b, scale, output),
    addRmsNorm,
  };
}
