// Measures how often the probabilistic held-out certificate holds in the tabular lab and draws
// docs/figures/certificate-coverage.svg; prints the table of docs/guides/statistics.md.
//   npm run build && node scripts/certificate-coverage.mjs [--trials 1000] [--out docs/figures]
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
const { createSeededRandom } = await load('theory/random.js');
const { renderSvgChart } = await load('figures/svg.js');

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
