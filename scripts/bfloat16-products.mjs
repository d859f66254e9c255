// The bfloat16-weight products (matmulBfloat16) against the float32 GEMM (matmul) on the same
// shapes, timed in one process with the two alternating (float32, bfloat16, float32, …) so that
// load from other processes falls on both alike: SmolLM2-135M's and Qwen2.5-1.5B's weight
// shapes [out × in], both ways a frozen weight is used (y = x·Wᵀ in the forward, "Bᵀ"; the
// input gradient dx = dy·W in the backward, "B"), at several row counts.
//
//   node --import tsx scripts/bfloat16-products.mjs [--rows 256,2048] [--threads 2]
//     [--models smollm2,qwen] [--rounds 7] [--seconds 0.1]
//
// Prints, per shape, layout and row count, the median over rounds of float32 time over
// bfloat16 time — the bfloat16 product's fraction of the float32 GEMM's speed — with its range
// over rounds, and both rates. TEAMTR_NATIVE_ADDON=<file> times another build of the addon
// (an older one, for a before-and-after comparison in the same conditions). --against <file>
// loads a second build in the same process and times its products too, each round alternating
// the builds, and adds two columns: this build's speed over the other's, bfloat16 and float32.
// --cpu times by the process's CPU time instead of wall time (with --threads 1, a core's own
// rate, which other processes on a shared machine disturb far less).
import { parseArgs } from 'node:util';
import { roundToBfloat16 } from '../src/backend/bfloat16.ts';
import { loadBuilds } from './addon-builds.mjs';

const weightShapes = {
  smollm2: [
    [576, 576],
    [192, 576],
    [1536, 576],
    [576, 1536],
    [49152, 576],
  ],
  qwen: [
    [1536, 1536],
    [256, 1536],
    [8960, 1536],
    [1536, 8960],
  ],
};

const { values: options } = parseArgs({
  options: {
    rows: { type: 'string', default: '256,2048' },
    threads: { type: 'string', default: '2' },
    models: { type: 'string', default: 'smollm2,qwen' },
    rounds: { type: 'string', default: '7' },
    seconds: { type: 'string', default: '0.1' },
    against: { type: 'string' },
    cpu: { type: 'boolean', default: false },
  },
});

const { backend, other } = loadBuilds('bfloat16-products', {
  against: options.against,
  threads: Number(options.threads),
});
const rounds = Number(options.rounds);

/** Values in [-0.5, 0.5) from a fixed linear congruential sequence. */
function values(length, seed) {
  const array = new Float32Array(length);
  let state = seed >>> 0;
  for (let index = 0; index < length; index++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    array[index] = state / 2 ** 32 - 0.5;
  }
  return array;
}

function median(list) {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

/** Seconds per call of `run`, over enough calls to last about `--seconds`. */
function secondsPerCall(run, calls) {
  const start = clockSeconds();
  for (let call = 0; call < calls; call++) run();
  return (clockSeconds() - start) / calls;
}

/** Wall time, or the process's CPU time with --cpu, in seconds. */
function clockSeconds() {
  if (!options.cpu) return Number(process.hrtime.bigint()) / 1e9;
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** One shape, one layout: float32 and bfloat16 timed alternately for `rounds` rounds. */
function compare({ out, inner, m, transposeB }) {
  // y = x·Wᵀ: C [m × out] from A [m × in]; dx = dy·W: C [m × in] from A [m × out].
  const [n, k] = transposeB ? [out, inner] : [inner, out];
  const weights = values(out * inner, 1);
  const bits = roundToBfloat16(weights);
  const a = values(m * k, 2);
  const c = new Float32Array(m * n);
  const shape = { a, c, m, n, k, transposeB };
  const singleOn = (kernels) => () =>
    kernels.matmul({ ...shape, b: weights, batch: 1, transposeA: false, strideA: 0, strideB: 0 });
  const halfOn = (kernels) => () => kernels.matmulBfloat16({ ...shape, b: bits });
  const [single, half] = [singleOn(backend), halfOn(backend)];
  const [otherSingle, otherHalf] = other ? [singleOn(other), halfOn(other)] : [null, null];
  const flops = 2 * m * n * k;
  const calls = Math.max(1, Math.round((Number(options.seconds) * 150e9) / flops));
  single();
  half();
  otherSingle?.();
  otherHalf?.();
  const ratios = [];
  const rates = { single: [], half: [] };
  const versus = { single: [], half: [] };
  for (let round = 0; round < rounds; round++) {
    const singleSeconds = secondsPerCall(single, calls);
    const halfSeconds = secondsPerCall(half, calls);
    ratios.push(singleSeconds / halfSeconds);
    rates.single.push(flops / singleSeconds / 1e9);
    rates.half.push(flops / halfSeconds / 1e9);
    if (!other) continue;
    versus.single.push(secondsPerCall(otherSingle, calls) / singleSeconds);
    versus.half.push(secondsPerCall(otherHalf, calls) / halfSeconds);
  }
  const ratio = median(ratios);
  return { ratio, low: Math.min(...ratios), high: Math.max(...ratios), rates, versus };
}

console.log(`threads ${options.threads}, ${rounds} rounds, ${backend.description}`);
console.log(
  'weight [out×in]  layout  rows  bf16/f32 [range]      f32 GFLOP/s  bf16 GFLOP/s' +
    (other ? '  bf16 this/other  f32 this/other' : ''),
);
for (const model of options.models.split(',')) {
  for (const [out, inner] of weightShapes[model]) {
    for (const m of options.rows.split(',').map(Number)) {
      for (const transposeB of [true, false]) {
        const { ratio, low, high, rates, versus } = compare({ out, inner, m, transposeB });
        const against = other
          ? `  ${median(versus.half).toFixed(2).padStart(15)}  ${median(versus.single).toFixed(2).padStart(15)}`
          : '';
        console.log(
          `${`${out}×${inner}`.padEnd(16)} ${(transposeB ? 'Bᵀ' : 'B').padEnd(7)} ` +
            `${String(m).padStart(4)}  ${ratio.toFixed(2)} [${low.toFixed(2)}–${high.toFixed(2)}]` +
            `  ${median(rates.single).toFixed(0).padStart(11)}  ${median(rates.half).toFixed(0).padStart(12)}` +
            against,
        );
      }
    }
  }
}
