/**
 * The one test suite every kernel backend must pass: each kernel against a float64 reference
 * written from its definition, each backward kernel against central finite differences of
 * that reference, on awkward sizes, subarray views, and extreme values (±1e4 logits, −∞
 * masks, NaN, rows with nothing to attend to, one-hot distributions). `typescript.test.ts` and
 * `native.test.ts` run it.
 */
import type { KernelBackend } from './types.js';
import { attentionTests } from './testing/suite-attention.js';
import { distributionComparisonTests } from './testing/suite-distribution-comparison.js';
import { elementwiseTests } from './testing/suite-elementwise.js';
import { gradientWriteTests } from './testing/suite-gradient-writes.js';
import { matmulTests } from './testing/suite-matmul.js';
import { matmulBfloat16Tests } from './testing/suite-matmul-bfloat16.js';
import { matmulGemmOrderTests } from './testing/suite-matmul-gemm-order.js';
import { normTests } from './testing/suite-norms.js';
import { samplingTests } from './testing/suite-sampling.js';
import { softmaxTests } from './testing/suite-softmax.js';

export function runBackendSuite(backend: KernelBackend): void {
  matmulTests(backend);
  matmulBfloat16Tests(backend);
  matmulGemmOrderTests(backend);
  softmaxTests(backend);
  samplingTests(backend);
  distributionComparisonTests(backend);
  normTests(backend);
  attentionTests(backend);
  elementwiseTests(backend);
  gradientWriteTests(backend);
}
