/**
 * The native kernels, every variant this host can run: the shared suite, agreement with the
 * reference backend, argument checks and determinism for each instruction-set build (an
 * AVX-512 host tests its AVX2 and portable kernels too, the paths of the host kinds it stands
 * in for), and the products once more on the OpenBLAS path when OpenBLAS is installed.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { runBackendSuite } from './backend.suite.js';
import {
  builtVariants,
  chooseVariant,
  type NativeAddon,
  probeHost,
  variantPath,
  variantsHostRuns,
} from './native-addon.js';
import { loadAddonFile, loadNativeBackend, nativeBackend, nativeBackendProblem } from './native.js';
import { runAgreementSuite } from './testing/agreement.js';
import { runNativeArgumentTests } from './testing/native-arguments.js';
import { runNativeDeterminismTests } from './testing/native-determinism.js';
import { matmulTests } from './testing/suite-matmul.js';
import { createTypeScriptBackend } from './typescript.js';

const built = builtVariants();

/** Every path of native/src/paths.h, as `paths()` names them. */
function pathsOfHeader(): string[] {
  const header = readFileSync(new URL('../../native/src/paths.h', import.meta.url), 'utf8');
  return [...header.matchAll(/^\s*X\(\w+, "[^"]+", "([^"]+)"\)/gm)].map((match) => match[1]!);
}

/**
 * The tests before it took every path of the header that this build can take: the OpenBLAS
 * path only where large products go to OpenBLAS, the column panels and weight rows only with
 * 16-float vectors, the AMX tiles only with them on a host with AMX (TEAMTR_AMX not set
 * otherwise), and their order on lanes only with TEAMTR_AMX=lanes (native-tile-order.test.ts
 * runs it in a process of its own).
 */
function everyPathTaken(addon: NativeAddon, label: string, hostFeatures: readonly string[]): void {
  test(`${label}: every kernel path was taken by the tests above`, () => {
    const info = addon.info();
    const taken = new Set(addon.paths().map((path) => path.path));
    const cannot = new Set<string>();
    if (info.sgemm !== 'openblas') cannot.add('OpenBLAS');
    if (info.vectorWidth !== 16) {
      cannot.add('column panels (matmul, matmulGemmOrder)');
      cannot.add('weight rows (x·Wᵀ, 24–128 rows)');
    }
    const setting = process.env.TEAMTR_AMX ?? 'on';
    const tiles = hostFeatures.includes('amx_tile') && hostFeatures.includes('amx_bf16');
    if (info.vectorWidth !== 16 || !tiles || setting !== 'on')
      cannot.add('AMX tiles (n % 16 = k % 32 = 0)');
    if (info.vectorWidth !== 16 || setting !== 'lanes')
      cannot.add("AMX tiles' order on lanes (TEAMTR_AMX=lanes)");
    const expected = pathsOfHeader().filter((path) => !cannot.has(path));
    assert.ok(expected.length >= 10, 'paths.h lists the paths');
    assert.deepEqual(
      expected.filter((path) => !taken.has(path)),
      [],
      `paths never taken; taken: ${[...taken].join(', ')}`,
    );
  });
}
const host = built.length > 0 && loadNativeBackend() ? probeHost(built) : null;

if (host) {
  const runnable = variantsHostRuns(host).filter((isa) => built.includes(isa));
  for (const isa of runnable) {
    const addon = loadAddonFile(variantPath(isa))!;
    const backend = nativeBackend(addon);
    describe(`native backend, ${isa} kernels: ${backend.description}`, () => {
      before(() => addon.resetPaths());
      runBackendSuite(backend);
      runAgreementSuite(backend, createTypeScriptBackend());
      runNativeArgumentTests(backend);
      runNativeDeterminismTests(backend, addon);
      everyPathTaken(addon, isa, host.features);
    });
    if (addon.info().blas !== 'openblas') continue;
    describe(`native backend, ${isa} kernels, products on OpenBLAS`, () => {
      const original = addon.info().sgemm as 'own' | 'openblas';
      before(() => {
        addon.setSgemm('openblas');
        addon.resetPaths();
      });
      after(() => addon.setSgemm(original));
      test('the OpenBLAS path is the one taken', () =>
        assert.equal(addon.info().sgemm, 'openblas'));
      matmulTests(backend);
      test('the products above ran on OpenBLAS', () =>
        assert.ok(addon.paths().some((path) => path.path === 'OpenBLAS')));
    });
  }

  describe('kernel path counters', () => {
    const addon = loadAddonFile(variantPath(runnable.at(-1)!))!;
    const backend = nativeBackend(addon);
    const product = (m: number, n: number, k: number) =>
      backend.matmul({
        a: new Float32Array(m * k).fill(1),
        b: new Float32Array(k * n).fill(1),
        c: new Float32Array(m * n),
        batch: 1,
        m,
        n,
        k,
        transposeA: false,
        transposeB: true,
        strideA: 0,
        strideB: 0,
      });
    test('each product counts on the path its shape takes, with its multiply-adds', () => {
      addon.resetPaths();
      product(4, 32, 8);
      product(4, 32, 8);
      product(300, 64, 40);
      const paths = addon.paths();
      const skinny = paths.find((path) => path.path.startsWith('skinny'));
      assert.deepEqual(skinny && [skinny.kernel, skinny.calls, skinny.multiplyAdds], [
        'matmul',
        2,
        2 * 4 * 32 * 8,
      ]);
      // The large product: our GEMM kernels or OpenBLAS, whichever runs large products here.
      const large = paths.filter((path) => path !== skinny);
      assert.deepEqual(
        large.map((path) => [path.calls, path.multiplyAdds]),
        [[1, 300 * 64 * 40]],
        JSON.stringify(paths),
      );
      addon.resetPaths();
      assert.deepEqual(addon.paths(), []);
    });

    test(
      'our kernels: decode-sized x·Wᵀ on the weight rows, deep products of a few hundred rows on the panels, shallow ones whose B outgrows L2 packed',
      {
        skip: addon.info().vectorWidth !== 16 && 'the panels and weight rows need 16-float vectors',
      },
      () => {
        const original = addon.info().sgemm as 'own' | 'openblas';
        addon.setSgemm('own');
        try {
          addon.resetPaths();
          product(64, 576, 576); // a decode step's query projection at batch 64
          product(512, 576, 1536); // a LoRA step's down projection (4 × 128 tokens)
          // Its gate projection (n = 1,536, k = 576), widened until B passes this host's L2.
          const l2 = host!.l2Bytes > 0 ? host!.l2Bytes : 1 << 20;
          product(512, Math.max(1536, Math.ceil(l2 / (576 * 4)) + 32), 576);
          const taken = addon.paths().map((path) => [path.path, path.calls]);
          assert.deepEqual(taken, [
            ['column panels (matmul, matmulGemmOrder)', 1],
            ['packed (matmul, matmulGemmOrder)', 1],
            ['weight rows (x·Wᵀ, 24–128 rows)', 1],
          ]);
        } finally {
          addon.setSgemm(original);
          addon.resetPaths();
        }
      },
    );
  });

  describe('native variants', () => {
    test('the widest variant the host runs is the one loaded by default', () => {
      const widest = chooseVariant(host, built);
      assert.equal(widest, runnable.at(-1));
      assert.equal(loadNativeBackend()!.description.includes(`${widest} kernels`), true);
    });
  });
} else {
  test.skip(
    `native backend: skipped because ${nativeBackendProblem()}; build it with ` +
      '`node scripts/build-native.mjs` to run these tests',
  );
}
