import type { ScalingReport } from '../../experiments/scaling-report.js';
import type { Figure, FigureSeries } from '../../report/figure.js';
import { paletteColor } from '../../report/palette.js';

/**
 * The scaling experiment's training curves (the paper's Fig. 3), one figure per team size:
 * held-out accuracy against generated tokens, a line per schedule at the mean over seeds and
 * dashed lines at the lowest and highest seed (the band).
 */
export function scalingCurveFigures(report: ScalingReport): Figure[] {
  const schedules = [...new Set(report.curves.map((curve) => curve.schedule))];
  const sizes = [...new Set(report.curves.map((curve) => curve.agents))].sort((a, b) => a - b);
  return sizes.map((agents) => {
    const series: FigureSeries[] = report.curves
      .filter((curve) => curve.agents === agents)
      .flatMap((curve) => {
        const color = paletteColor(schedules.indexOf(curve.schedule));
        const line = (label: string, y: (index: number) => number, dashed: boolean) => ({
          label,
          color,
          style: 'line' as const,
          dashed,
          points: curve.points.map((point, index) => ({ x: point.generatedTokens, y: y(index) })),
        });
        return [
          line(curve.schedule, (index) => curve.points[index]!.accuracy, false),
          line(`${curve.schedule} seed band`, (index) => curve.points[index]!.band[0], true),
          line('', (index) => curve.points[index]!.band[1], true),
        ];
      });
    return {
      id: `scaling-curves-N${agents}`,
      title: `Held-out accuracy of teams of ${agents}, by schedule`,
      description:
        'Mean over seeds (solid) and the lowest and highest seed (dashed) at each evaluation, ' +
        'against the generated tokens spent so far.',
      xLabel: 'generated tokens',
      yLabel: 'held-out accuracy',
      yMin: 0,
      yMax: 1,
      series,
      notes: [],
    };
  });
}
