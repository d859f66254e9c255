import {
  cellsOf,
  occupancyGapByUpdateIndex,
  signedErrorsByStage,
  surrogateErrors,
  surrogateErrorSlopes,
  type ScalingRun,
} from './scaling-analysis.js';
import { certificateCoverage, occupancyRange, resamplingDecisions } from './scaling-diagnostics.js';
import { outcomes, pairedOutcomes, staleFreshRatios, trainingCurve } from './scaling-outcomes.js';
import { scalingNotes, scalingTables, type ScalingTable } from './scaling-tables.js';

import type { ScalingReport } from './scaling-report-data.js';

export type { ScalingTable } from './scaling-tables.js';
export type { ScalingReport } from './scaling-report-data.js';

/**
 * The report of a grid's runs. `baseline` names the schedule the others are paired with
 * (sequential-stale by default, else the first schedule of the grid).
 */
export function analyzeScaling(
  runs: readonly ScalingRun[],
  options: { task: string; baseline?: string },
): ScalingReport {
  const cells = cellsOf(runs);
  const schedules = [...new Set(cells.map((cell) => cell.schedule))];
  const baseline =
    options.baseline ??
    (schedules.includes('sequential-stale') ? 'sequential-stale' : schedules[0]!);
  return {
    task: options.task,
    runs: runs.length,
    baseline,
    paired: pairedOutcomes(runs, baseline),
    outcomes: outcomes(runs),
    occupancyGap: occupancyGapByUpdateIndex(runs),
    occupancyRange: occupancyRange(runs),
    surrogateError: surrogateErrors(runs),
    surrogateErrorSlopes: surrogateErrorSlopes(runs),
    staleFreshRatios: staleFreshRatios(
      cells.map((cell) => ({ ...cell, stageErrors: signedErrorsByStage(runs, cell) })),
    ),
    certificateCoverage: certificateCoverage(runs),
    resampling: resamplingDecisions(runs),
    curves: cells.map((cell) => ({ ...cell, points: trainingCurve(runs, cell) })),
  };
}

function markdownTable(table: ScalingTable): string {
  const cell = (value: string | number | null) => (value === null ? '' : String(value));
  return [
    `### ${table.title}`,
    table.caption,
    [
      `| ${table.columns.join(' | ')} |`,
      `|${table.columns.map(() => '---').join('|')}|`,
      ...table.rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
    ].join('\n'),
  ].join('\n\n');
}

/** The report as Markdown: each table with its takeaway, then what every figure aggregates. */
export function formatScalingReport(report: ScalingReport): string {
  const notes = scalingNotes(report).map((note) => `- ${note}`);
  const sections = [
    `## Scaling grid on ${report.task} (${report.runs} runs), paired with ${report.baseline}`,
    ...scalingTables(report).map(markdownTable),
    '### How each figure is aggregated',
    notes.join('\n'),
  ];
  return `${sections.join('\n\n')}\n`;
}
