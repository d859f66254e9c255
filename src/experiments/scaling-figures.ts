import type { Figure, FigureSeries } from '../figures/figure.js';
import { paletteColor } from '../figures/palette.js';
import type { ScalingReport } from './scaling-report.js';

/**
 * The scaling experiment's training curves (the paper's Fig. 3), one figure per team size:
 * held-out accuracy against generated tokens, a line per schedule at the mean over seeds with
 * the lowest-to-highest seed range as a shaded band in the schedule's colour. The caption
 * states where each schedule ended.
 */
export function scalingCurveFigures(report: ScalingReport): Figure[] {
  const schedules = [...new Set(report.curves.map((curve) => curve.schedule))];
  const sizes = [...new Set(report.curves.map((curve) => curve.agents))].sort((a, b) => a - b);
  return sizes.map((agents) => {
    const curves = report.curves.filter((curve) => curve.agents === agents);
    const series: FigureSeries[] = curves.map((curve) => ({
      label: curve.schedule,
      color: paletteColor(schedules.indexOf(curve.schedule)),
      style: 'line' as const,
      bandLabel: `${curve.schedule} seed band`,
      points: curve.points.map((point) => ({
        x: point.generatedTokens,
        y: point.accuracy,
        low: point.band[0],
        high: point.band[1],
      })),
    }));
    const endings = curves
      .filter((curve) => curve.points.length > 0)
      .map((curve) => {
        const last = curve.points.at(-1)!;
        return `${curve.schedule} ${(100 * last.accuracy).toFixed(1)}% [${(100 * last.band[0]).toFixed(1)}%, ${(100 * last.band[1]).toFixed(1)}%]`;
      });
    return {
      id: `scaling-curves-N${agents}`,
      title: `Held-out accuracy of teams of ${agents}, by schedule`,
      description:
        `At the last evaluation, mean over seeds [lowest, highest seed]: ${endings.join('; ')}. ` +
        'Lines: mean over seeds at each evaluation, against the generated tokens spent so far; ' +
        'shaded: the lowest to the highest seed.',
      xLabel: 'generated tokens',
      yLabel: 'held-out accuracy',
      series,
      notes: [],
    };
  });
}
