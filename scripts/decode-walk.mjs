// A decode step's products as two builds of the native addon run them, alternating walk by walk
// in one process so that load from other processes falls on both alike: SmolLM2-135M's weights
// (30 layers × query, key, value, output, gate, up and down, then the tied LM head; 269 MB in
// bfloat16, every matrix its own so that each walk reads them from memory as decoding does),
// y = x·Wᵀ with `--rows` rows of x.
//
//   node scripts/decode-walk.mjs --new build/Release/teamtr_native_avx512.node \
//     --old /elsewhere/teamtr_native_avx512.node [--rows 1] [--threads 1] [--seconds 20]
//     [--kernel matmulBfloat16|matmulGemmOrder]
//
// Prints the median over walks of new time over old time with its quartiles, both rates, and
// whether the two builds gave the same bits. With --threads 1 a walk is timed by the process's
// CPU time, which a shared machine disturbs least; with more, by wall time.
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: options } = parseArgs({
  options: {
    new: { type: 'string' },
    old: { type: 'string' },
    rows: { type: 'string', default: '1' },
    threads: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '20' },
    kernel: { type: 'string', default: 'matmulBfloat16' },
  },
});
if (!options.new || !options.old) {
  console.error('decode-walk: give two addon files, --new <file> and --old <file>');
  process.exit(1);
}
const require = createRequire(import.meta.url);
const builds = [options.new, options.old].map((file) => require(path.resolve(file)));
const rows = Number(options.rows);
const threads = Number(options.threads);
const halfWeights = options.kernel === 'matmulBfloat16';
for (const build of builds) build.setThreads(threads);
const clock = threads === 1 ? () => process.cpuUsage().user / 1000 : () => performance.now();

let state = 1;
const uniform = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32 - 0.5;
const weights = (size) =>
  halfWeights
    ? Uint16Array.from({ length: size }, () => 0x3c00 + Math.floor(uniform() * 512))
    : Float32Array.from({ length: size }, uniform);
const layer = [
  [576, 576],
  [192, 576],
  [192, 576],
  [576, 576],
  [1536, 576],
  [1536, 576],
  [576, 1536],
];
const products = [];
for (let index = 0; index < 30; index++)
  for (const [n, k] of layer) products.push({ n, k, weight: weights(n * k) });
products.push({ n: 49152, k: 576, weight: weights(49152 * 576) });
const input = Float32Array.from({ length: rows * 1536 }, uniform);
const outputs = builds.map(() => products.map(({ n }) => new Float32Array(rows * n)));
const bytes = products.reduce((total, { weight }) => total + weight.byteLength, 0);
const defaults = halfWeights ? [1, 0] : [];

function walk(which) {
  const build = builds[which];
  const started = clock();
  products.forEach(({ n, k, weight }, index) =>
    build[options.kernel](
      input.subarray(0, rows * k),
      weight,
      outputs[which][index],
      rows,
      n,
      k,
      true,
      ...defaults,
    ),
  );
  return clock() - started;
}

walk(0);
walk(1);
const ratios = [];
const totals = [0, 0];
const end = performance.now() + Number(options.seconds) * 1000;
while (performance.now() < end) {
  const times = [walk(0), walk(1)];
  totals[0] += times[0];
  totals[1] += times[1];
  ratios.push(times[0] / times[1]);
}
ratios.sort((left, right) => left - right);
const at = (fraction) => ratios[Math.floor(fraction * (ratios.length - 1))].toFixed(3);
const rate = (which) => ((bytes * ratios.length) / totals[which] / 1e6).toFixed(1);
const same = outputs[0].every((output, index) =>
  output.every((value, entry) => Object.is(value, outputs[1][index][entry])),
);
console.log(
  `${options.kernel}, ${rows} row(s), ${threads} thread(s), ${threads === 1 ? 'CPU' : 'wall'} time: ` +
    `${ratios.length} walks of ${(bytes / 1e6).toFixed(0)} MB each; new/old time median ${at(0.5)} ` +
    `(quartiles ${at(0.25)}–${at(0.75)}); new ${rate(0)} GB/s, old ${rate(1)} GB/s; same bits: ${same}`,
);
