import type { Estimate } from '../rl/index.js';
import type { Rate } from './scaling-diagnostics.js';
import type { ScalingReport } from './scaling-report-data.js';

/**
 * The scaling report as tables, each with its takeaway computed from the data: what scaling.md
 * shows and what the result file (docs/results/) records. Accuracy differences are in
 * percentage points; brackets are 95% intervals whose kind the notes state.
 */
export interface ScalingTable {
  title: string;
  /** The takeaway in one sentence. */
  caption: string;
  columns: string[];
  rows: (string | number | null)[][];
}

const fixed = (value: number, digits: number) =>
  Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
const percent = (value: number) =>
  Number.isFinite(value) ? `${(100 * value).toFixed(1)}%` : 'n/a';
const points = (value: number) =>
  Number.isFinite(value) ? `${value >= 0 ? '+' : '−'}${Math.abs(100 * value).toFixed(1)}` : 'n/a';
const four = (value: number) => fixed(value, 4);

function withInterval(estimate: Estimate, format: (value: number) => string): string {
  const interval = estimate.interval
    ? ` [${format(estimate.interval[0])}, ${format(estimate.interval[1])}]`
    : '';
  return `${format(estimate.value)}${interval}`;
}

function rate(value: Rate): string {
  if (!value.interval) return 'n/a';
  return `${percent(value.rate)} [${percent(value.interval[0])}, ${percent(value.interval[1])}]`;
}

/** "ahead", "behind" or "within noise" of an estimate's interval against 0. */
function verdict(estimate: Estimate): 'ahead' | 'behind' | 'within noise' {
  if (estimate.interval && estimate.interval[0] > 0) return 'ahead';
  if (estimate.interval && estimate.interval[1] < 0) return 'behind';
  return 'within noise';
}

function pairedCaption(report: ScalingReport): string {
  const schedules = [...new Set(report.paired.map((row) => row.schedule))];
  const phrases = schedules.map((schedule) => {
    const rows = report.paired.filter((row) => row.schedule === schedule);
    const parts = rows.map((row) => `N = ${row.agents} ${verdict(row.atMatchedTokens)}`);
    return `${schedule}: ${parts.join(', ')}`;
  });
  return `Against ${report.baseline} of the same seed at matched tokens (an interval excluding 0 says ahead or behind): ${phrases.join('; ')}.`;
}

function pairedTable(report: ScalingReport): ScalingTable {
  return {
    title: `Paired with ${report.baseline}: accuracy difference (points)`,
    caption: pairedCaption(report),
    columns: [
      'N',
      'schedule',
      'seeds',
      'Δ at matched tokens',
      'seeds ahead / behind',
      'Δ at matched updates',
      'Δ regressions',
    ],
    rows: report.paired.map((row) => [
      row.agents,
      row.schedule,
      row.seeds,
      withInterval(row.atMatchedTokens, points),
      `${row.ahead} / ${row.behind}`,
      withInterval(row.atMatchedUpdates, points),
      withInterval(row.regressions, (value) => fixed(value, 1)),
    ]),
  };
}

function outcomesTable(report: ScalingReport): ScalingTable {
  const spread = Math.max(0, ...report.outcomes.map((row) => row.tokenSpread));
  return {
    title: 'Each schedule on its own (mean over seeds)',
    caption: `Every schedule of a seed spent the same generated tokens within ${(100 * spread).toFixed(2)}%; matched updates read each seed's schedules at one update count.`,
    columns: [
      'N',
      'schedule',
      'seeds',
      'tokens',
      'largest token spread',
      'updates',
      'acc. untrained',
      'acc. at matched tokens',
      'matched updates',
      'acc. at matched updates',
      'regressions',
    ],
    rows: report.outcomes.map((row) => [
      row.agents,
      row.schedule,
      row.seeds,
      Math.round(row.tokens),
      `${(100 * row.tokenSpread).toFixed(2)}%`,
      fixed(row.updates, 1),
      percent(row.startAccuracy),
      percent(row.accuracyAtMatchedTokens),
      fixed(row.matchedUpdates, 1),
      percent(row.accuracyAtMatchedUpdates),
      fixed(row.regressions, 1),
    ]),
  };
}

function surrogateTable(report: ScalingReport): ScalingTable {
  const ratios = report.staleFreshRatios.map(
    (row) =>
      `${row.stale}/${row.fresh} at N = ${row.agents}: ${withInterval(row.ratio, (value) => fixed(value, 2))}`,
  );
  return {
    title: 'Surrogate error per update (held-out improvement − surrogate)',
    caption: ratios.length
      ? `Stale over fresh mean |error|: ${ratios.join('; ')} (a ratio above 1 is a stale batch costing accuracy of the surrogate).`
      : 'No fresh schedule in the grid to compare the stale ones with.',
    columns: [
      'N',
      'schedule',
      'updates',
      'mean |error|',
      'mean error',
      'noise floor',
      'stale/fresh',
    ],
    rows: report.surrogateError.map((row) => {
      const ratio = report.staleFreshRatios.find(
        (entry) => entry.agents === row.agents && entry.stale === row.schedule,
      );
      return [
        row.agents,
        row.schedule,
        row.updates,
        withInterval(row.absoluteError, four),
        withInterval(row.signedError, four),
        four(row.noiseFloor),
        ratio ? withInterval(ratio.ratio, (value) => fixed(value, 2)) : null,
      ];
    }),
  };
}

function coverageTable(report: ScalingReport): ScalingTable {
  const rows = report.certificateCoverage;
  const rates = rows.map((row) => row.held.rate).filter(Number.isFinite);
  const stated = rows[0]?.stated ?? Number.NaN;
  const consistent = rows.filter((row) => row.consistentWithStated).length;
  return {
    title: 'The probabilistic certificate on held-out prompts',
    caption: rates.length
      ? `The second-order lower bound at a stated ${percent(stated)} lay below the measured held-out improvement in ${percent(Math.min(...rates))}–${percent(Math.max(...rates))} of updates per cell; that measurement is itself noisy, so a bound valid at ${percent(stated)} lies within 1.96 of its standard errors in at least ${percent(rows[0]!.floorIfValid)} of updates: ${consistent} of ${rows.length} cells are consistent with that (their interval reaches it).`
      : 'No update was measured on held-out prompts (certificate.heldOutProblems = 0).',
    columns: [
      'N',
      'schedule',
      'updates',
      'stated',
      'held',
      'held within noise',
      'a valid bound gives ≥',
      'consistent',
      'first order held',
      'mean bound − measured',
      'noise floor',
    ],
    rows: rows.map((row) => [
      row.agents,
      row.schedule,
      row.updates,
      percent(row.stated),
      rate(row.held),
      rate(row.heldWithinNoise),
      percent(row.floorIfValid),
      row.consistentWithStated ? 'yes' : 'no',
      rate(row.firstOrderHeld),
      four(row.meanExcess),
      four(row.noiseFloor),
    ]),
  };
}

function resamplingTable(report: ScalingReport): ScalingTable {
  const rows = report.resampling;
  return {
    title: 'What the lazy schedule decided',
    caption: rows.length
      ? `lazy resampled after ${rows.map((row) => `${percent(row.resampled.rate)} of decisions at N = ${row.agents}`).join(', ')} (teamtr: all, sequential-stale: none).`
      : 'No lazy runs in the grid.',
    columns: [
      'N',
      'decisions',
      'resampled',
      'batches per stage',
      'mean TV̂',
      'median 2ε·TV̂ / slack',
      'mean relative ESS',
    ],
    rows: rows.map((row) => [
      row.agents,
      row.decisions,
      rate(row.resampled),
      fixed(row.batchesPerStage, 2),
      four(row.meanTotalVariation),
      fixed(row.medianStaleOverSlack, 2),
      fixed(row.meanEffectiveSampleSize, 3),
    ]),
  };
}

function occupancyTable(report: ScalingReport): ScalingTable {
  const outside = report.occupancyRange.reduce((total, row) => total + row.outside, 0);
  const largest = Math.max(0, ...report.occupancyRange.map((row) => row.largest));
  const byIndex = (agents: number, schedule: string) =>
    report.occupancyGap
      .filter((row) => row.agents === agents && row.schedule === schedule)
      .map((row) => `${row.updateIndex}: ${withInterval(row.gap, (value) => fixed(value, 3))}`)
      .join('; ');
  return {
    title: 'Occupancy gap by update index within a stage',
    caption: `${outside} of the estimates left [0, 1]; the largest was ${fixed(largest, 3)}.`,
    columns: [
      'N',
      'schedule',
      'updates',
      'largest',
      'mean gap by update index [95% interval over stages]',
    ],
    rows: report.occupancyRange.map((row) => [
      row.agents,
      row.schedule,
      row.updates,
      fixed(row.largest, 3),
      byIndex(row.agents, row.schedule),
    ]),
  };
}

export function scalingTables(report: ScalingReport): ScalingTable[] {
  return [
    pairedTable(report),
    outcomesTable(report),
    surrogateTable(report),
    coverageTable(report),
    resamplingTable(report),
    occupancyTable(report),
  ];
}

/** What each figure is aggregated over and what each interval is a statement about. */
export function scalingNotes(report: ScalingReport): string[] {
  return [
    `Paired differences: per seed, the schedule's accuracy minus ${report.baseline}'s (same untrained team, same evaluation problems and random streams); the mean over seeds with a 95% percentile bootstrap over seeds (the pairs). With 3 seeds the interval spans about the lowest to the highest difference: it excludes 0 when every seed agrees in sign.`,
    'Matched tokens: the evaluation at the end of the budget; the trainer stops at the token, so runs of a seed differ by less than one prompt group. Matched updates: the evaluation after the largest count of agent updates (evaluation.everyUpdates marks) that every schedule of the seed reached.',
    'Per-cell accuracies, tokens, updates and regressions: per-run values averaged over seeds (per-run mean).',
    "Surrogate errors: pooled over the cell's updates (all seeds); intervals from a 95% percentile bootstrap over stages (a stage's updates share a batch). The stale/fresh ratio resamples both schedules' stages independently. Noise floor: √(2/π) × the mean standard error of the held-out improvement.",
    'Certificate coverage: pooled over the cell\'s updates; "held" counts a lower bound at most the measured held-out improvement, itself noisy (its standard error is beside it as the noise floor); rates carry Wilson 95% intervals that treat updates as independent. "Consistent": the cell\'s "held within noise" interval reaches stated × 0.975, the least rate a bound valid at its stated rate gives against a measurement with normal noise; the exact check, with the truth known, is the tabular lab\'s (docs/guides/statistics.md).',
    "Occupancy gap: mean (1 − W)_+ over the stage's first batch (unbiased, in [0, 1]); by update index, pooled over the cell's stages with a 95% percentile bootstrap over stages.",
    "Lazy decisions: pooled over the cell's decisions; the resample rate carries a Wilson 95% interval.",
  ];
}
