import { describe, test } from 'node:test';
import { runBackendSuite } from './backend.suite.js';
import { NATIVE_ADDON_PATH, loadNativeBackend, nativeBackendProblem } from './native.js';
import { runAgreementSuite } from './testing/agreement.js';
import { runNativeArgumentTests } from './testing/native-arguments.js';
import { runNativeDeterminismTests } from './testing/native-determinism.js';
import { createTypeScriptBackend } from './typescript.js';

const native = loadNativeBackend();

if (native) {
  describe(`native backend: ${native.description}`, () => {
    runBackendSuite(native);
    runAgreementSuite(native, createTypeScriptBackend());
    runNativeArgumentTests(native);
    runNativeDeterminismTests(native);
  });
} else {
  test.skip(
    `native backend: skipped because ${nativeBackendProblem()}; build ${NATIVE_ADDON_PATH} ` +
      'with `node scripts/build-native.mjs` to run these tests',
  );
}
