import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSvgChart } from '../figures/svg.js';
import { resolveTheoryConfig } from './config.js';
import { runTheoryExperiment } from './experiment.js';
import { buildScalingFigure } from './scaling-figure.js';

test('the theory figure: four metrics in four colours, SE bands, fits, slopes in the caption', () => {
  const config = resolveTheoryConfig({
    agentCounts: [2, 3, 4],
    games: 4,
    families: ['random'],
    bootstrapSamples: 100,
  });
  const result = runTheoryExperiment(config);
  const figure = buildScalingFigure(result);
  assert.equal(figure.xScale, 'log');
  assert.equal(figure.yScale, 'log');
  const labelled = figure.series.filter((series) => series.label !== '');
  assert.equal(labelled.length, 4);
  assert.equal(new Set(labelled.map((series) => series.color)).size, 4);
  const fresh = result.families[0]!.fits.freshError!;
  assert.ok(figure.description.includes(`fresh error ${fresh.slope!.toFixed(2)} [`));
  const stale = labelled[0]!;
  const group = result.families[0]!.fits.staleError!.groups[0]!;
  assert.deepEqual(stale.points[0], {
    x: 2,
    y: group.mean,
    low: group.mean - group.standardError,
    high: group.mean + group.standardError,
  });
  const svg = renderSvgChart(figure, { caption: true });
  assert.ok(!svg.includes('NaN') && !svg.includes('stroke-dasharray'));
  assert.ok(svg.includes('Fitted exponents of N'));
});
