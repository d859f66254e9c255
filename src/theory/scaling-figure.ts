import type { Figure, FigureSeries } from '../figures/figure.js';
import { paletteColor } from '../figures/palette.js';
import { scalingMetrics, type TheoryExperimentResult } from './experiment.js';
import type { PowerLawFit } from './fit.js';
import { formatSlope } from './report.js';

/**
 * The scaling figure of `teamtr theory` (scaling.svg): for the headline family, the mean per
 * game of the accumulated surrogate error (stale and fresh occupancy) and of the certificate's
 * penalty against N on log-log axes, ±1 standard error over games as a shaded band and the
 * fitted power law as a line in the same colour. The caption states the fitted slopes.
 */

/** The metrics drawn, in legend order. */
const drawn = ['staleError', 'freshError', 'stalePenalty', 'freshPenalty'] as const;

function labelOf(key: string): string {
  return key.replace(/([A-Z])/g, ' $1').toLowerCase();
}

function seriesOf(fit: PowerLawFit, key: string, color: string, xs: number[]): FigureSeries[] {
  const measured: FigureSeries = {
    label: `${labelOf(key)} (slope ${fit.slope === null ? 'n/a' : fit.slope.toFixed(2)})`,
    color,
    style: 'points',
    points: fit.groups.map((group) => ({
      x: group.agentCount,
      y: group.mean,
      low: group.mean - group.standardError,
      high: group.mean + group.standardError,
    })),
  };
  if (fit.slope === null || fit.intercept === null) return [measured];
  const { slope, intercept } = fit;
  const line: FigureSeries = {
    label: '',
    color,
    style: 'line',
    points: [Math.min(...xs), Math.max(...xs)].map((x) => ({
      x,
      y: Math.exp(intercept + slope * Math.log(x)),
    })),
  };
  return [measured, line];
}

export function buildScalingFigure(result: TheoryExperimentResult): Figure {
  const headline = result.families[0]!;
  const xs = [...result.config.agentCounts].sort((first, second) => first - second);
  const metrics = scalingMetrics.filter((metric) =>
    (drawn as readonly string[]).includes(metric.key),
  );
  const series = metrics.flatMap((metric, index) =>
    seriesOf(headline.fits[metric.key]!, metric.key, paletteColor(index), xs),
  );
  const slope = (key: string) => formatSlope(headline.fits[key]!);
  return {
    id: 'theory-scaling',
    title: `Accumulated surrogate error and certificate penalty per stage (${headline.family})`,
    description:
      `Fitted exponents of N (95% bootstrap intervals): stale error ${slope('staleError')}, ` +
      `fresh error ${slope('freshError')}, stale penalty ${slope('stalePenalty')}, fresh ` +
      `penalty ${slope('freshPenalty')}. Points: mean over ${result.config.games} games per N; ` +
      'bands: ±1 standard error; lines: the fitted power laws.',
    xLabel: 'agents N (log scale)',
    yLabel: 'mean per game (log scale)',
    xScale: 'log',
    yScale: 'log',
    xTicks: xs,
    series,
    notes: [],
  };
}
