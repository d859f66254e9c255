import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { builtVariants, variantPath } from './native-addon.js';
import { loadNativeBackend } from './native.js';
import {
  SizeExpressionError,
  cSizeExpression,
  nativeHeader,
  nativeHeaderPath,
} from './native-header.js';
import { kernelSignatures } from './types.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('the committed kernel_signatures.h is the one the kernel signatures generate', () => {
  assert.equal(
    readFileSync(path.join(root, nativeHeaderPath), 'utf8'),
    nativeHeader(),
    `${nativeHeaderPath} is stale: run \`npm run generate:kernels\` and rebuild the addon`,
  );
});

test('the header lists every argument of every kernel, in order, with its C kind', () => {
  const header = nativeHeader();
  assert.match(
    header,
    /#define SOFTMAX_ARGUMENTS\(X\) X\(0, input, "input", FLOATS\) X\(1, output, "output", FLOATS\) X\(2, rows, "rows", SIZE\) X\(3, columns, "columns", SIZE\)\n/,
  );
  assert.match(header, /X\(7, transpose_a, "transposeA", BOOLEAN\)/);
  assert.match(header, /X\(5, entropy, "entropy", OPTIONAL_FLOATS\)/);
  assert.match(header, /X\(11, alpha, "alpha", NUMBER\)/);
  assert.match(header, /#define ATTENTION_BACKWARD_ARGUMENT_COUNT 18\n/);
});

test(
  'the addon exports exactly the kernels of the signatures',
  { skip: !loadNativeBackend() },
  () => {
    const addon = createRequire(import.meta.url)(variantPath(builtVariants()[0]!)) as Record<
      string,
      unknown
    >;
    assert.deepEqual(
      Object.keys(addon)
        .filter(
          (name) =>
            ![
              'host',
              'info',
              'setThreads',
              'setSgemm',
              'paths',
              'resetPaths',
              'readMemory',
              'addressAlignment',
            ].includes(name),
        )
        .sort(),
      Object.keys(kernelSignatures).sort(),
    );
  },
);

test("array lengths become C size checks over the kernel's own sizes", () => {
  const header = nativeHeader();
  assert.match(
    header,
    /#define MATMUL_SIZES\(X\) X\("a", a, \(arguments_span\(\(double\)batch, \(double\)stride_a, \(double\)m \* \(double\)k\)\), FLOATS\)/,
  );
  assert.match(
    header,
    /#define SWIGLU_SIZES\(X\) X\("up", up, \(\(double\)gate\.length\), FLOATS\)/,
  );
  assert.match(
    header,
    /X\("keyMask", key_mask, \(\(double\)batch \* \(double\)key_capacity\), OPTIONAL_FLOATS\)/,
  );
  assert.match(header, /#define SUM_OF_SQUARES_SIZES\(X\) \n/);
});

test('a length naming something the kernel does not take fails generation, naming it', () => {
  const signature = { x: 'floats', rows: 'size', scale: 'number' } as const;
  assert.equal(cSizeExpression('rows * 2', signature, 'demo'), '((double)rows * 2)');
  assert.throws(
    () => cSizeExpression('rows * colums', signature, 'demo'),
    (error: Error) =>
      error instanceof SizeExpressionError &&
      /demo.*"colums" is not a size argument/.test(error.message),
  );
  assert.throws(() => cSizeExpression('scale', signature, 'demo'), SizeExpressionError);
  assert.throws(() => cSizeExpression('length(rows)', signature, 'demo'), /needs an array/);
  assert.throws(() => cSizeExpression('rows / 2', signature, 'demo'), /only sizes/);
});
