import type { Estimate } from '../rl/index.js';
import {
  cellsOf,
  occupancyGapByUpdateIndex,
  signedErrorsByStage,
  surrogateErrors,
  surrogateErrorSlopes,
  type ErrorSlope,
  type OccupancyGapRow,
  type ScalingRun,
  type SurrogateErrorRow,
} from './scaling-analysis.js';
import {
  outcomes,
  staleFreshRatios,
  trainingCurve,
  type CurvePoint,
  type OutcomeRow,
  type StaleFreshRatio,
} from './scaling-outcomes.js';

/** Everything the scaling experiment reports, as data (scaling.json) and as Markdown. */
export interface ScalingReport {
  runs: number;
  occupancyGap: OccupancyGapRow[];
  surrogateError: SurrogateErrorRow[];
  surrogateErrorSlopes: ErrorSlope[];
  staleFreshRatios: StaleFreshRatio[];
  outcomes: OutcomeRow[];
  curves: { agents: number; schedule: string; points: CurvePoint[] }[];
}

export function analyzeScaling(runs: readonly ScalingRun[]): ScalingReport {
  const cells = cellsOf(runs);
  return {
    runs: runs.length,
    occupancyGap: occupancyGapByUpdateIndex(runs),
    surrogateError: surrogateErrors(runs),
    surrogateErrorSlopes: surrogateErrorSlopes(runs),
    staleFreshRatios: staleFreshRatios(
      cells.map((cell) => ({ ...cell, stageErrors: signedErrorsByStage(runs, cell) })),
    ),
    outcomes: outcomes(runs),
    curves: cells.map((cell) => ({ ...cell, points: trainingCurve(runs, cell) })),
  };
}

const fixed = (value: number, digits: number) =>
  Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
const percent = (value: number) =>
  Number.isFinite(value) ? `${(100 * value).toFixed(1)}%` : 'n/a';

function withInterval(estimate: Estimate, format: (value: number) => string): string {
  const interval = estimate.interval
    ? ` [${format(estimate.interval[0])}, ${format(estimate.interval[1])}]`
    : '';
  return `${format(estimate.value)}${interval}`;
}

function table(header: string[], rows: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

const four = (value: number) => fixed(value, 4);

function outcomesTable(report: ScalingReport): string {
  return table(
    [
      'N',
      'schedule',
      'seeds',
      'acc. at matched tokens',
      'regressions',
      'tokens',
      'acc. at matched updates',
      'regressions',
      'matched stage',
    ],
    report.outcomes.map((row) => [
      String(row.agents),
      row.schedule,
      String(row.seeds),
      withInterval(row.accuracyAtMatchedTokens, percent),
      withInterval(row.regressionsAtMatchedTokens, (value) => fixed(value, 1)),
      Math.round(row.generatedTokens).toLocaleString('en-US'),
      withInterval(row.accuracyAtMatchedUpdates, percent),
      withInterval(row.regressionsAtMatchedUpdates, (value) => fixed(value, 1)),
      fixed(row.matchedStage, 1),
    ]),
  );
}

function surrogateErrorTables(report: ScalingReport): string[] {
  return [
    table(
      ['N', 'schedule', 'updates', 'mean |error|', 'mean error', 'noise floor'],
      report.surrogateError.map((row) => [
        String(row.agents),
        row.schedule,
        String(row.updates),
        withInterval(row.absoluteError, four),
        withInterval(row.signedError, four),
        four(row.noiseFloor),
      ]),
    ),
    table(
      ['schedule', 'log-log slope of mean |error| vs N'],
      report.surrogateErrorSlopes.map((row) => [
        row.schedule,
        withInterval(row.slope, (value) => fixed(value, 2)),
      ]),
    ),
    table(
      ['N', 'stale / fresh mean |error|'],
      report.staleFreshRatios.map((row) => [
        String(row.agents),
        `${row.stale} / ${row.fresh}: ${withInterval(row.ratio, (value) => fixed(value, 2))}`,
      ]),
    ),
  ];
}

function occupancyGapTable(report: ScalingReport): string {
  return table(
    ['N', 'schedule', 'update index', 'stages', 'gap'],
    report.occupancyGap.map((row) => [
      String(row.agents),
      row.schedule,
      String(row.updateIndex),
      String(row.stages),
      withInterval(row.gap, four),
    ]),
  );
}

/** The report as Markdown tables (what the README quotes), 95% bootstrap intervals in brackets. */
export function formatScalingReport(report: ScalingReport): string {
  const sections = [
    `## Accuracy and regressions (${report.runs} runs)`,
    outcomesTable(report),
    '## Surrogate error per update (held-out improvement − surrogate)',
    ...surrogateErrorTables(report),
    '## Occupancy gap by update index within a stage',
    occupancyGapTable(report),
  ];
  return `${sections.join('\n\n')}\n`;
}
