import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MetricsRecord, UpdateRecord } from '../trainer/records.js';
import type { Figure } from '../figures/figure.js';
import { runColors } from './figure-data.js';
import { buildFigures, figureIds } from './figures.js';
import type { RunView } from './runs.js';
import { syntheticRecords } from './test-support/synthetic-run.js';

function view(id: string, label: string, records: MetricsRecord[], schedule = 'teamtr'): RunView {
  return {
    id,
    label,
    directory: `/runs/${label}`,
    config: { schedule, seed: Number(id) },
    summary: null,
    records,
  };
}

function byId(figures: Figure[], id: string): Figure {
  const figure = figures.find((entry) => entry.id === id);
  assert.ok(figure, id);
  return figure;
}

const records = syntheticRecords({ stages: 4, regressionStages: [3], outOfRegionEvery: 4 });
const updates = records.filter((record): record is UpdateRecord => record.type === 'update');

describe('buildFigures on one run', () => {
  const figures = buildFigures([view('0', 'run', records)]);

  test('gives every figure of the page, in order', () => {
    assert.deepEqual(
      figures.map((figure) => figure.id),
      [...figureIds],
    );
  });

  test('team reward and eval accuracy are drawn against generated tokens', () => {
    const reward = byId(figures, 'reward');
    assert.equal(reward.series.length, 1);
    assert.deepEqual(
      reward.series[0]!.points,
      updates.map((record) => ({ x: record.generatedTokens, y: record.batchRewardMean })),
    );
    const evaluations = records.filter((record) => record.type === 'eval');
    assert.deepEqual(
      byId(figures, 'accuracy').series[0]!.points.map((point) => point.x),
      evaluations.map((record) => record.generatedTokens),
    );
  });

  test('KL has one series per agent and one δ line; notes give the out-of-region rate', () => {
    const kl = byId(figures, 'kl');
    assert.deepEqual(
      kl.series.map((series) => series.label),
      ['finisher', 'checker', 'solver', 'δ = 0.01'],
    );
    assert.equal(
      kl.series[0]!.points.length,
      updates.filter((record) => record.agent === 'finisher').length,
    );
    const outside = updates.filter((record) => !record.inRegion).length;
    assert.ok(outside > 0);
    assert.match(kl.notes[0]!, new RegExp(`out of region ${outside}/${updates.length} updates`));
  });

  test('cumulative certificate and measured improvement sum only the measured updates', () => {
    const certificate = byId(figures, 'certificate');
    const measured = updates.filter((record) => record.measuredImprovement !== null);
    assert.ok(measured.length < updates.length, 'some updates have no measured improvement');
    const [improvement, bound] = certificate.series;
    assert.equal(improvement!.points.length, measured.length);
    const total = measured.reduce((sum, record) => sum + record.measuredImprovement!, 0);
    assert.ok(Math.abs(improvement!.points.at(-1)!.y - total) < 1e-12);
    assert.ok(
      Math.abs(
        bound!.points.at(-1)!.y - measured.reduce((sum, record) => sum + record.certificate, 0),
      ) < 1e-12,
    );
    assert.match(certificate.notes[0]!, /rank correlation ρ cumulative/);
  });

  test('occupancy gap: mean per position in the stage, null first updates left out', () => {
    const occupancy = byId(figures, 'occupancy');
    const points = occupancy.series[0]!.points;
    assert.deepEqual(
      points.map((point) => point.x),
      [2, 3],
    );
    const second = updates
      .filter((record) => record.updateIndex === 1)
      .map((record) => record.occupancyGap!);
    assert.ok(Math.abs(points[0]!.y - second.reduce((a, b) => a + b, 0) / second.length) < 1e-12);
  });

  test('probability shift by rank: bars per rank bucket for in- and out-of-region updates', () => {
    const shift = byId(figures, 'rank-shift');
    assert.deepEqual(shift.xCategories, ['1', '2', '3', '4–5', '6–10', '11–100']);
    assert.deepEqual(
      shift.series.map((series) => series.label),
      [
        `in region (${updates.filter((record) => record.inRegion).length} updates)`,
        `out of region (${updates.filter((record) => !record.inRegion).length} updates)`,
      ],
    );
    assert.ok(
      shift.series.every((series) => series.style === 'bars' && series.points.length === 6),
    );
    const inRegionTop = updates
      .filter((record) => record.inRegion)
      .map((record) => record.probabilityShiftByRank[0]!.massShiftPerPosition);
    assert.ok(
      Math.abs(
        shift.series[0]!.points[0]!.y - inRegionTop.reduce((a, b) => a + b, 0) / inRegionTop.length,
      ) < 1e-12,
    );
  });

  test('regressions: change per stage, the noise threshold, and the regressed stages', () => {
    const regressions = byId(figures, 'regressions');
    assert.equal(regressions.series.length, 3);
    assert.deepEqual(
      regressions.series[2]!.points.map((point) => point.x),
      [3],
    );
    assert.match(regressions.notes[0]!, /1 regression in 4 stages \(stage 3\)/);
  });
});

describe('buildFigures edge cases', () => {
  test('a run without records yet gives empty figures, not errors', () => {
    const figures = buildFigures([view('0', 'fresh', [])]);
    assert.equal(figures.length, figureIds.length);
    for (const figure of figures) assert.deepEqual(figure.series, [], figure.id);
  });

  test('a series with no points is dropped (no regressions, no out-of-region updates)', () => {
    const calm = syntheticRecords({ stages: 2, regressionStages: [], outOfRegionEvery: 1000 });
    const figures = buildFigures([view('0', 'calm', calm)]);
    assert.equal(byId(figures, 'regressions').series.length, 2);
    assert.equal(byId(figures, 'rank-shift').series.length, 1);
  });

  test('missing or malformed fields are skipped rather than drawn as zero', () => {
    const damaged = updates.slice(0, 3).map((record, index) => ({
      ...record,
      kl: index === 0 ? (null as unknown as number) : record.kl,
      probabilityShiftByRank: index === 1 ? (undefined as never) : record.probabilityShiftByRank,
    }));
    const figures = buildFigures([view('0', 'damaged', damaged)]);
    const klPoints = byId(figures, 'kl')
      .series.filter((series) => !series.label.startsWith('δ'))
      .reduce((total, series) => total + series.points.length, 0);
    assert.equal(klPoints, 2);
  });

  test('several runs side by side: labelled series, one hue per schedule, shades per seed', () => {
    const runs = [
      view('0', 'teamtr-seed0', records),
      view('1', 'teamtr-seed1', records),
      view('2', 'stale-seed0', records, 'sequential-stale'),
    ];
    const figures = buildFigures(runs);
    assert.deepEqual(
      byId(figures, 'reward').series.map((series) => series.label),
      ['teamtr-seed0', 'teamtr-seed1', 'stale-seed0'],
    );
    assert.equal(byId(figures, 'kl').series.length, 3 * 3 + 1);
    assert.ok(
      byId(figures, 'certificate').series.some(
        (series) => series.label === 'stale-seed0 · certificate',
      ),
    );
    const colors = runColors(runs);
    assert.equal(new Set(colors.values()).size, 3);
    assert.notEqual(colors.get('0'), colors.get('1'));
  });
});
