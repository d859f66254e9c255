import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../util/errors.js';
import { certificateBounds } from './certificate-bounds.js';
import { resolveTheoryConfig } from './config.js';
import { runGame, runTheoryExperiment, scalingMetrics } from './experiment.js';
import { renderTheoryReport, renderTheoryTable } from './report.js';
import { summarizeTheory } from './summary.js';

const tiny = resolveTheoryConfig({
  agentCounts: [1, 2, 3],
  games: 4,
  families: ['dense', 'random'],
  bootstrapSamples: 200,
});

test('the config fills defaults and rejects bad settings with their key', () => {
  const defaults = resolveTheoryConfig({});
  assert.deepEqual(defaults.agentCounts, [2, 3, 4, 6, 8]);
  assert.equal(defaults.families[0], 'random');
  assert.throws(() => resolveTheoryConfig({ games: 1 }), ConfigError);
  assert.throws(() => resolveTheoryConfig({ gamez: 3 }), /unknown key "gamez".*valid keys/);
  assert.throws(
    () => resolveTheoryConfig({ families: ['poker'] }),
    /valid: "random", "dense", "consensus", "chain"/,
  );
  assert.throws(() => resolveTheoryConfig({ agentCounts: [2, 2] }), /distinct/);
  assert.throws(() => resolveTheoryConfig({ agentCounts: [2, 12] }), /lower the largest N/);
});

test('a game is a function of (seed, family, N, index) alone', () => {
  const first = runGame(tiny, 'random', 2, 3);
  const again = runGame({ ...tiny, agentCounts: [2, 5], games: 9 }, 'random', 2, 3);
  assert.deepEqual(first, again);
  assert.notDeepEqual(first, runGame(tiny, 'random', 2, 2));
  assert.notDeepEqual(first.schedules, runGame(tiny, 'dense', 2, 3).schedules);
  assert.equal(first.schedules['teamtr']!.updates, 2);
  assert.equal(first.schedules['sequential-stale']!.updates, 2);
  assert.equal(first.schedules['joint']!.updates, 1);
});

test('the experiment fits every metric, checks every update, and is reproducible', () => {
  const result = runTheoryExperiment(tiny);
  assert.deepEqual(
    result.families.map((family) => family.family),
    ['dense', 'random'],
  );
  const dense = result.families[0]!;
  assert.equal(dense.outcomes.length, 12);
  for (const metric of scalingMetrics) assert.equal(dense.fits[metric.key]!.groups.length, 3);
  // With one agent the stale and fresh stages coincide, so their errors do too.
  const single = dense.outcomes.filter((outcome) => outcome.agentCount === 1);
  for (const outcome of single) {
    assert.equal(
      outcome.schedules['teamtr']!.surrogateError,
      outcome.schedules['sequential-stale']!.surrogateError,
    );
  }
  assert.equal(result.check.updates, 2 * 4 * ((1 + 2 + 3) * 2 + 3));
  assert.equal(result.check.violations, 0);
  assert.ok(result.check.maxExcess < 0);
  assert.ok(result.check.maxErrorShare > 0 && result.check.maxErrorShare <= 1);
  assert.deepEqual(summarizeTheory(runTheoryExperiment(tiny)), summarizeTheory(result));
});

test('the summary has the promised keys and the reports name the slopes', () => {
  const result = runTheoryExperiment(tiny);
  const summary = summarizeTheory(result, { wall_seconds: 1.5 });
  for (const key of [
    'stale_slope',
    'stale_ci',
    'fresh_slope',
    'fresh_ci',
    'games',
    'updates',
    'certificate_violations',
    'max_violation',
  ]) {
    assert.ok(key in summary, key);
  }
  assert.equal(summary.family, 'dense');
  assert.equal(summary.games, 24);
  assert.equal(summary.stale_slope, result.families[0]!.fits['staleError']!.slope);
  assert.equal(summary.stale_ci!.length, 2);
  assert.ok(
    summary.stale_ci![0] <= summary.stale_slope! && summary.stale_slope! <= summary.stale_ci![1],
  );
  assert.equal(summary.wall_seconds, 1.5);
  assert.deepEqual(Object.keys(summary.by_family), ['dense', 'random']);
  const report = renderTheoryReport(result, { wallSeconds: 1.5, plotFile: 'scaling.svg' });
  assert.ok(report.includes(summary.stale_slope!.toFixed(2)));
  assert.ok(report.includes('![log-log scaling](scaling.svg)'));
  assert.ok(report.includes('src/theory/certificate.ts'));
  const table = renderTheoryTable(result);
  assert.ok(table.includes('family random'));
  assert.ok(table.includes(`0 of ${result.check.updates} updates`));
});

test('every tighter certificate is tallied over every update, unviolated, its quantiles in order', () => {
  const result = runTheoryExperiment(tiny);
  const summary = summarizeTheory(result);
  const bounds = summary.certificate_bounds;
  assert.deepEqual(
    Object.keys(bounds),
    certificateBounds.map((bound) => bound.summaryKey),
  );
  for (const [key, entry] of Object.entries(bounds)) {
    assert.equal(entry.updates, result.check.updates, key);
    assert.equal(entry.violations, 0, key);
    assert.equal(entry.max_violation, 0, key);
    const quantiles = entry.ratio_quantiles!;
    const ordered = [quantiles.q10, quantiles.q25, quantiles.median, quantiles.q75, quantiles.q90];
    for (let index = 1; index < ordered.length; index++) {
      assert.ok(ordered[index - 1]! <= ordered[index]!, key);
    }
    assert.ok(quantiles.q90 <= 1, `${key}: a valid bound never certifies more than the truth`);
  }
  // The lab-only bound is the tightest; the second-order trainer bound beats today's.
  assert.ok(
    bounds['exact_weighted']!.ratio_quantiles!.median >
      bounds['lm_weighted']!.ratio_quantiles!.median,
  );
  assert.ok(
    bounds['lm_weighted']!.ratio_quantiles!.median > bounds['lm_current']!.ratio_quantiles!.median,
  );
  const perFamily = summary.by_family['dense']!['certificate_bounds'] as typeof bounds;
  assert.equal(perFamily['current']!.updates, result.families[0]!.check.updates);
  assert.ok(renderTheoryReport(result).includes('lm_weighted'));
  assert.ok(renderTheoryTable(result).includes('exact_weighted'));
});

test('the tallies split by schedule and add up to the whole', () => {
  const summary = summarizeTheory(runTheoryExperiment(tiny));
  const bySchedule = summary.certificate_bounds_by_schedule as Record<
    string,
    Record<string, { updates: number; violations: number }>
  >;
  assert.deepEqual(Object.keys(bySchedule).sort(), ['joint', 'sequential-stale', 'teamtr']);
  for (const bound of certificateBounds) {
    const parts = Object.values(bySchedule).map((schedule) => schedule[bound.summaryKey]!);
    const total = summary.certificate_bounds[bound.summaryKey]!;
    assert.equal(
      parts.reduce((sum, part) => sum + part.updates, 0),
      total.updates,
    );
  }
});
