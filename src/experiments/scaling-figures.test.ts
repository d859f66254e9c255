import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSvgChart } from '../figures/svg.js';
import { scalingCurveFigures } from './scaling-figures.js';
import type { ScalingReport } from './scaling-report.js';

const curve = (schedule: string, accuracies: number[], spread: number) => ({
  agents: 8,
  schedule,
  points: accuracies.map((accuracy, index) => ({
    generatedTokens: 100_000 * (index + 1),
    stage: 4 * (index + 1),
    accuracy,
    band: [accuracy - spread, accuracy + spread] as [number, number],
  })),
});

const report = {
  curves: [
    curve('teamtr', [0.18, 0.2, 0.224], 0.04),
    curve('sequential-stale', [0.2, 0.26, 0.298], 0.02),
    curve('joint', [0.19, 0.23, 0.251], 0.05),
  ],
} as unknown as ScalingReport;

test('one colour per schedule, the seed range as a shaded band, the ending in the caption', () => {
  const [figure] = scalingCurveFigures(report);
  const colors = figure!.series.map((series) => series.color);
  assert.equal(new Set(colors).size, 3, 'three schedules, three colours');
  assert.ok(figure!.series.every((series) => !series.dashed));
  assert.deepEqual(figure!.series[0]!.points[2], {
    x: 300_000,
    y: 0.224,
    low: 0.224 - 0.04,
    high: 0.224 + 0.04,
  });
  assert.equal(figure!.yMin, undefined, 'the axis is fitted to the data, not fixed to 0–1');
  assert.match(figure!.description, /teamtr 22\.4% \[18\.4%, 26\.4%\]; sequential-stale 29\.8%/);
  const svg = renderSvgChart(figure!, { caption: true });
  assert.equal(
    (svg.match(/fill-opacity="0.2"/g) ?? []).length,
    3 + 3,
    'three bands, three swatches',
  );
  assert.ok(!svg.includes('stroke-dasharray'));
  assert.ok(!svg.includes('>1.0<') && !svg.includes('>0<'), 'no 0–1 axis for data in 0.14–0.35');
});
