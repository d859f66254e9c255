import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NATIVE_ADDON_PATH, loadNativeBackend } from './native.js';
import { nativeHeader, nativeHeaderPath } from './native-header.js';
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
    const addon = createRequire(import.meta.url)(NATIVE_ADDON_PATH) as Record<string, unknown>;
    assert.deepEqual(
      Object.keys(addon)
        .filter((name) => !['info', 'setThreads'].includes(name))
        .sort(),
      Object.keys(kernelSignatures).sort(),
    );
  },
);
