import { mean } from '../rl/index.js';
import type { UpdateRecord } from '../trainer/records.js';
import { certificateStatistics } from '../trainer/summary.js';
import type { Figure, FigurePoint, FigureSeries } from '../figures/figure.js';
import {
  colorOf,
  finite,
  maximum,
  pointsOf,
  stagesOf,
  updatesOf,
  withData,
} from './figure-data.js';
import { alertColor, shade } from '../figures/palette.js';
import type { RunView } from './runs.js';
import { formatPercent, formatValue } from '../figures/ticks.js';

/** Whether updates improved the team as certified: certificates, occupancy gaps, regressions. */

export function certificateFigure(runs: readonly RunView[], colors: Map<string, string>): Figure {
  const series: FigureSeries[] = [];
  for (const run of runs) {
    const measured = updatesOf(run).filter(
      (record) =>
        finite(record.measuredImprovement) &&
        finite(record.certificate) &&
        finite(record.globalUpdate),
    );
    const cumulative = (value: (record: UpdateRecord) => number): FigurePoint[] => {
      let total = 0;
      return measured.map((record) => ({ x: record.globalUpdate, y: (total += value(record)) }));
    };
    const color = colorOf(colors, run);
    const prefix = runs.length > 1 ? `${run.label} · ` : '';
    series.push(
      {
        label: `${prefix}measured improvement`,
        color,
        style: 'line',
        points: cumulative((record) => record.measuredImprovement!),
      },
      {
        label: `${prefix}certificate`,
        color: shade(color, -0.35),
        style: 'line',
        dashed: true,
        points: cumulative((record) => record.certificate),
      },
    );
  }
  return {
    id: 'certificate',
    title: 'Cumulative certificate vs measured improvement',
    description:
      'Running sums over updates with a measured improvement: the certificate is a lower bound, so its dashed curve should stay below and rank updates like the measured one.',
    xLabel: 'update (since the run began)',
    yLabel: 'cumulative improvement (reward)',
    series: withData(series),
    notes: runs.map((run) => {
      const statistics = certificateStatistics(run.records);
      const below =
        statistics.certificateAboveMeasuredFraction === null
          ? 'n/a'
          : formatPercent(1 - statistics.certificateAboveMeasuredFraction);
      return `${run.label}: rank correlation ρ cumulative ${formatValue(statistics.cumulativeRankCorrelation)}, per update ${formatValue(statistics.perUpdateRankCorrelation)}; certificate ≤ measured in ${below} of updates`;
    }),
  };
}

export function occupancyFigure(runs: readonly RunView[], colors: Map<string, string>): Figure {
  const series = runs.map((run): FigureSeries => {
    const byPosition = new Map<number, number[]>();
    for (const record of updatesOf(run)) {
      if (!finite(record.occupancyGap) || !finite(record.updateIndex)) continue;
      byPosition.set(record.updateIndex, [
        ...(byPosition.get(record.updateIndex) ?? []),
        record.occupancyGap,
      ]);
    }
    const points = [...byPosition.entries()]
      .sort(([a], [b]) => a - b)
      .map(([position, gaps]) => ({
        x: position + 1,
        y: mean(gaps),
      }));
    return { label: run.label, color: colorOf(colors, run), style: 'line', markers: true, points };
  });
  return {
    id: 'occupancy',
    title: 'Occupancy gap per update index',
    description:
      'Total variation between the contexts an agent sees under the start-of-stage team and under the current one, by its position in the stage (mean over stages). Stale schedules train on the start-of-stage contexts and carry this gap; the first update has none.',
    xLabel: 'position of the update within its stage',
    yLabel: 'occupancy gap (TV)',
    xIntegers: true,
    yMin: 0,
    series: withData(series),
    notes: runs.map((run) => {
      const gaps = updatesOf(run)
        .map((record) => record.occupancyGap)
        .filter(finite);
      return `${run.label}: ${gaps.length} measured gaps, largest ${formatValue(maximum(gaps))}`;
    }),
  };
}

/** A run's reward change per stage, its −2 SE noise line and its regressions. */
function regressionSeries(run: RunView, color: string, prefix: string): FigureSeries[] {
  const stages = stagesOf(run).filter((record) => finite(record.stage));
  return [
    {
      label: `${prefix}reward change in stage`,
      color,
      style: 'line',
      markers: true,
      points: pointsOf(
        stages,
        (record) => record.stage,
        (record) => record.improvement,
      ),
    },
    {
      label: `${prefix}−2 SE (noise)`,
      color: shade(color, 0.45),
      style: 'line',
      dashed: true,
      points: pointsOf(
        stages,
        (record) => record.stage,
        (record) => -2 * record.improvementStandardError,
      ),
    },
    {
      label: `${prefix}regression`,
      color: alertColor,
      style: 'points',
      points: pointsOf(
        stages.filter((record) => record.regression === true),
        (record) => record.stage,
        (record) => record.improvement,
      ),
    },
  ];
}

export function regressionFigure(runs: readonly RunView[], colors: Map<string, string>): Figure {
  const series = runs.flatMap((run) =>
    regressionSeries(run, colorOf(colors, run), runs.length > 1 ? `${run.label} · ` : ''),
  );
  return {
    id: 'regressions',
    title: 'Per-stage regressions',
    description:
      'Change of the team reward over each stage (paired batches on the same prompts). A stage regresses when the drop is beyond noise: below −2 standard errors (red points).',
    xLabel: 'stage',
    yLabel: 'reward change over the stage',
    xIntegers: true,
    series: withData(series),
    notes: runs.map((run) => {
      const stages = stagesOf(run);
      const regressed = stages
        .filter((record) => record.regression === true)
        .map((record) => record.stage);
      const which = regressed.length
        ? ` (stage${regressed.length > 1 ? 's' : ''} ${regressed.join(', ')})`
        : '';
      return `${run.label}: ${regressed.length} regression${regressed.length === 1 ? '' : 's'} in ${stages.length} stages${which}`;
    }),
  };
}
