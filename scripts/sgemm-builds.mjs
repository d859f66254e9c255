// The machine bound's product (sgemm 4096×1024×1024, src/bench/bound.ts) on this build of the
// addon and on another, in one process, the two alternating round by round so that load from
// other processes falls on both alike. `--against openblas` times this build's own kernels
// against OpenBLAS called through it (TEAMTR_SGEMM's two paths) instead.
//
//   node --import tsx scripts/sgemm-builds.mjs --against <addon .node file | openblas>
//     [--threads 2] [--rounds 9] [--seconds 0.3] [--cpu] [--shape 4096,1024,1024] [--transpose-b]
//     [--weights 1] [--fresh-a] [--outputs 1]
//
// Prints each round's GFLOP/s of both builds and the median of their ratio (this/other).
// --cpu divides by the process's CPU time instead of wall time: with --threads 1 that is a
// core's own rate, which a shared machine disturbs far less than two threads' wall time.
// --weights n cycles the products through n different B matrices: enough of them (n × k × n × 4
// bytes well past the last-level cache) and every product reads its weights from memory, as a
// decode step does. --fresh-a writes A anew (on this thread) before every product, as the kernel
// before a product writes its input: a product whose threads share A then moves it between the
// cores' caches each time, where a static A would sit in both after the first round.
// --outputs n cycles C through n buffers, so that C is not in cache either (a step's products
// write buffers the kernels before them did not touch).
import { parseArgs } from 'node:util';
import { allocate } from '../src/tensor/index.ts';
import { setNativeSgemm } from '../src/backend/native.ts';
import { loadBuilds } from './addon-builds.mjs';

const { values: options } = parseArgs({
  options: {
    against: { type: 'string' },
    threads: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '9' },
    seconds: { type: 'string', default: '0.3' },
    cpu: { type: 'boolean', default: false },
    shape: { type: 'string', default: '4096,1024,1024' },
    'transpose-b': { type: 'boolean', default: false },
    weights: { type: 'string', default: '1' },
    'fresh-a': { type: 'boolean', default: false },
    outputs: { type: 'string', default: '1' },
  },
});

const threads = Number(options.threads);
const againstOpenblas = options.against === 'openblas';
const { backend, other } = loadBuilds('sgemm-builds', {
  against: againstOpenblas ? undefined : options.against,
  threads,
});
if (!other && !againstOpenblas) {
  console.error(
    'sgemm-builds: --against must name a loadable addon build (.node), or be "openblas"',
  );
  process.exit(1);
}
/** The two sides: kernels, and the large-product path to select before timing them. */
const builds = againstOpenblas
  ? [
      { kernels: backend, path: 'own' },
      { kernels: backend, path: 'openblas' },
    ]
  : [
      { kernels: backend, path: null },
      { kernels: other, path: null },
    ];

const [m, n, k] = options.shape.split(',').map(Number);

/** `length` floats from `fill(index)` in a tensor-pool buffer: on a cache line, as operands are. */
function pooled(length, fill) {
  const view = allocate(length);
  for (let index = 0; index < length; index++) view[index] = fill(index);
  return view;
}

const a = pooled(m * k, (index) => ((index * 7919) % 1000) / 1000 - 0.5);
const weights = Array.from({ length: Number(options.weights) }, (_unused, matrix) =>
  pooled(k * n, (index) => (((index + matrix) * 104729) % 1000) / 1000 - 0.5),
);
const outputs = Array.from({ length: Number(options.outputs) }, () => pooled(m * n, () => 0));
let calls = 0;
const product = (kernels) => {
  // One write a line (x + 0 is not x for −0, so the store is kept): A's lines change owner.
  if (options['fresh-a']) for (let index = 0; index < a.length; index += 16) a[index] += 0;
  const call = calls++;
  return kernels.matmul({
    a,
    b: weights[call % weights.length],
    c: outputs[call % outputs.length],
    batch: 1,
    m,
    n,
    k,
    transposeA: false,
    transposeB: options['transpose-b'],
    strideA: 0,
    strideB: 0,
  });
};

/** Seconds of the clock in use: the process's CPU time (--cpu) or wall time. */
function clock() {
  if (!options.cpu) return Number(process.hrtime.bigint()) / 1e9;
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** GFLOP/s of `kernels` over at least --seconds of products. */
function rate({ kernels, path }) {
  if (path) setNativeSgemm(path);
  const start = clock();
  let products = 0;
  let now = start;
  do {
    product(kernels);
    products++;
    now = clock();
  } while (now - start < Number(options.seconds));
  return (2 * m * n * k * products) / (now - start) / 1e9;
}

const median = (list) => [...list].sort((x, y) => x - y)[list.length >> 1];
builds.forEach((build) => rate(build));
const ratios = [];
console.log(
  `${m}×${n}×${k}${options['transpose-b'] ? ' (Bᵀ)' : ''}, ${weights.length} weight matrices, ${outputs.length} outputs, ${threads} threads, ${options.cpu ? 'CPU' : 'wall'} time${againstOpenblas ? '; other: OpenBLAS through this build' : ''}`,
);
console.log('round  this GFLOP/s  other GFLOP/s  this/other');
for (let round = 0; round < Number(options.rounds); round++) {
  const [mine, theirs] = builds.map(rate);
  ratios.push(mine / theirs);
  console.log(
    `${String(round + 1).padStart(5)}  ${mine.toFixed(1).padStart(12)}  ${theirs.toFixed(1).padStart(13)}  ${(mine / theirs).toFixed(3).padStart(10)}`,
  );
}
console.log(
  `median this/other ${median(ratios).toFixed(3)} [${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}]`,
);
