import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../util/errors.js';
import {
  builtVariants,
  checkAmxSetting,
  chooseVariant,
  probeHost,
  type HostInfo,
} from './native-addon.js';
import { runInChild } from './testing/child-process.js';

/** A host as the addon would describe it, with only the fields the choice reads. */
function hostOf(widestIsa: string, kind: string): HostInfo {
  return {
    vendor: kind.split('-')[0]!,
    model: 'a test CPU',
    kind,
    widestIsa,
    features: [],
    l1dBytes: 0,
    l2Bytes: 0,
    l3Bytes: 0,
    cpus: 2,
  };
}

const allBuilt = ['portable', 'avx2', 'avx512'];

describe('choosing the addon variant for a host', () => {
  test('the widest variant the host runs, among those built', () => {
    assert.equal(chooseVariant(hostOf('avx512', 'intel-avx512-bf16'), allBuilt), 'avx512');
    assert.equal(chooseVariant(hostOf('avx2', 'amd-avx2'), allBuilt), 'avx2');
    assert.equal(chooseVariant(hostOf('portable', 'intel-portable'), allBuilt), 'portable');
    assert.equal(chooseVariant(hostOf('avx512', 'amd-avx512'), ['portable', 'avx2']), 'avx2');
  });

  test('TEAMTR_ISA picks a narrower variant the host runs', () => {
    assert.equal(chooseVariant(hostOf('avx512', 'intel-avx512'), allBuilt, 'avx2'), 'avx2');
    assert.equal(chooseVariant(hostOf('avx512', 'intel-avx512'), allBuilt, 'portable'), 'portable');
  });

  test('a variant the host cannot run is refused, naming what it lacks and what it runs', () => {
    assert.throws(
      () => chooseVariant(hostOf('avx2', 'intel-avx2'), allBuilt, 'avx512'),
      (error: Error) =>
        error instanceof ConfigError &&
        /TEAMTR_ISA: "avx512" needs AVX-512 F, BW, DQ and VL, which this host \(intel-avx2, a test CPU\) lacks; variants it runs: portable, avx2/.test(
          error.message,
        ),
    );
  });

  test('TEAMTR_AMX: on, off or lanes, and lanes only with the AVX-512 kernels', () => {
    for (const setting of [undefined, '', 'on', 'off', 'lanes']) checkAmxSetting(setting, 'avx512');
    assert.throws(
      () => checkAmxSetting('yes', 'avx512'),
      /TEAMTR_AMX: "yes" is not one of on, off, lanes/,
    );
    assert.throws(
      () => checkAmxSetting('lanes', 'avx2'),
      /TEAMTR_AMX: "lanes" needs the avx512 variant of the native addon; this process loads avx2/,
    );
  });

  test('an unknown or unbuilt variant lists the built ones', () => {
    assert.throws(
      () => chooseVariant(hostOf('avx512', 'intel-avx512'), allBuilt, 'avx1024'),
      /"avx1024" is not a built variant of the native addon \(built: portable, avx2, avx512\)/,
    );
  });
});

const built = builtVariants();

describe(
  'the host as the addon reads it',
  { skip: built.length === 0 && 'addon not built' },
  () => {
    test('a kind, the features behind it, caches and CPUs', () => {
      const host = probeHost(built);
      assert.match(host.kind, /^[a-z0-9]+(-[a-z0-9]+)*$/);
      assert.ok(host.cpus >= 1);
      if (host.widestIsa === 'avx512') {
        for (const feature of ['avx512f', 'avx512bw', 'avx512dq', 'avx512vl'])
          assert.ok(host.features.includes(feature), feature);
        assert.equal(host.kind.endsWith('-bf16'), host.features.includes('avx512_bf16'));
      }
      if (process.platform === 'linux') assert.ok(host.l2Bytes > 0, 'L2 read from sysfs');
    });

    test('TEAMTR_ISA=portable loads the portable kernels (4-float vectors)', () => {
      const script =
        "import('./src/backend/native.ts').then((m) => { m.loadNativeBackend(); " +
        'console.log(JSON.stringify(m.nativeBuildInfo())); })';
      const run = runInChild(script, { TEAMTR_ISA: 'portable' });
      const info = JSON.parse(run.stdout) as {
        isa: string;
        vectorWidth: number;
        tuning: Record<string, number>;
      };
      assert.equal(info.isa, 'portable');
      assert.equal(info.vectorWidth, 4);
      // Every block size host.c derives from the caches, as the bench's host report prints them.
      assert.deepEqual(Object.keys(info.tuning).sort(), [
        'aBlockBytes',
        'packedColumns',
        'packedRows',
        'rowTileBytes',
      ]);
      for (const [name, size] of Object.entries(info.tuning)) assert.ok(size > 0, name);
    });
  },
);
