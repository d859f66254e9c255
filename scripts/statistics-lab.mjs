// The tabular-lab measurements of docs/guides/statistics.md: the occupancy-gap estimators against
// the exact total variation, and how often the probabilistic held-out certificate holds (also
// drawn as docs/figures/certificate-coverage.svg). Prints both tables.
//   npm run build && node scripts/statistics-lab.mjs [--trials 1000] [--out docs/figures]
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const load = (module) => import(path.join(root, 'dist', module));
const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '1000' },
    out: { type: 'string', default: path.join(root, 'docs', 'figures') },
  },
});
const trials = Number(values.trials);
if (!(Number.isInteger(trials) && trials > 0)) {
  console.error(`--trials must be a positive integer, got ${values.trials}`);
  process.exit(2);
}
const { certificateCoverage, coverageUpdates } = await load('theory/certificate-coverage.js');
const { certificateCoverageFigure } = await load('theory/certificate-coverage-figure.js');
const { occupancyGapCases, occupancyGapTrials } = await load('theory/occupancy-gap-check.js');
const { createSeededRandom } = await load('theory/random.js');
const { renderSvgChart } = await load('figures/svg.js');
const { mean, standardError } = await load('rl/index.js');

const gapTrials = 2 * trials;
console.log(`Occupancy gap: 64 trajectories per batch, ${gapTrials} batches per case, 90% intervals`);
console.log('| case | exact TV | mean of (1 − W)_+ ± SE | its sd | ½·mean|W − 1|: mean, sd, largest, share > 1 | interval covered |');
console.log('|---|---|---|---|---|---|');
occupancyGapCases(0).forEach((gapCase, index) => {
  const result = occupancyGapTrials({
    ...gapCase,
    trajectories: 64,
    trials: gapTrials,
    alpha: 0.1,
    random: createSeededRandom(100 + index),
  });
  const sd = (values) => standardError(values) * Math.sqrt(values.length);
  const old = result.halfAbsoluteDeviations;
  const above = old.filter((value) => value > 1).length / old.length;
  console.log(
    `| ${gapCase.label} | ${result.exact.toFixed(4)} | ${mean(result.estimates).toFixed(4)} ± ` +
      `${standardError(result.estimates).toFixed(4)} | ${sd(result.estimates).toFixed(3)} | ` +
      `${mean(old).toFixed(4)}, ${sd(old).toFixed(3)}, ${Math.max(...old).toFixed(2)}, ` +
      `${(100 * above).toFixed(1)}% | ${((100 * result.covered) / gapTrials).toFixed(1)}% |`,
  );
});
console.log();

const families = ['random', 'dense', 'chain', 'consensus'];
const shape = { clusters: 16, clusterSize: 4 };
const cells = certificateCoverage({
  updates: coverageUpdates({ families, agentCount: 3, delta: 0.01, seed: 0 }),
  ...shape,
  trials,
  confidences: [0.8, 0.9, 0.95, 0.99],
  methods: ['clustered-bootstrap', 'normal', 'empirical-bernstein'],
  bootstrapSamples: 1000,
  random: createSeededRandom(1),
});
const setting =
  `Tabular lab: the last agent's KL-0.01 update in one game of each of ${families.length} ` +
  `families (N = 3, T = 2, V = 2), ${trials} held-out batches each of ${shape.clusters} ` +
  `prompts × ${shape.clusterSize} trajectories, the second-order certificate.`;
const figure = certificateCoverageFigure(cells, setting);
mkdirSync(values.out, { recursive: true });
const file = path.join(values.out, `${figure.id}.svg`);
writeFileSync(file, renderSvgChart(figure, { caption: true }));
console.log(
  '| method | stated rate | held (bound ≤ its expectation) | held (bound ≤ true improvement) |',
);
console.log('|---|---|---|---|');
for (const cell of cells) {
  const rate = (held) => `${((100 * held) / cell.trials).toFixed(1)}%`;
  const stated = Number.isFinite(cell.confidence) ? `${100 * cell.confidence}%` : '—';
  console.log(
    `| ${cell.method} | ${stated} | ${rate(cell.heldForExpectation)} | ${rate(cell.heldForTrueImprovement)} |`,
  );
}
console.log(`wrote ${path.relative(process.cwd(), file)}`);
