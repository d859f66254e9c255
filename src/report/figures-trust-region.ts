import { mean } from '../rl/index.js';
import type { UpdateRecord } from '../trainer/records.js';
import type { Figure, FigurePoint, FigureSeries } from '../figures/figure.js';
import { colorOf, finite, maximum, minimum, pointsOf, updatesOf, withData } from './figure-data.js';
import { paletteColor, referenceColor, shade } from '../figures/palette.js';
import type { RunView } from './runs.js';
import { formatPercent, formatValue } from '../figures/ticks.js';

/** How far each update moved its agent: KL against δ and probability shift by rank. */

export function klFigure(runs: readonly RunView[]): Figure {
  const series: FigureSeries[] = [];
  for (const run of runs) {
    const updates = updatesOf(run);
    const agents = [...new Set(updates.map((record) => record.agent))];
    for (const agent of agents) {
      series.push({
        label: runs.length > 1 ? `${run.label} · ${agent}` : agent,
        color: paletteColor(series.length),
        style: 'points',
        points: pointsOf(
          updates.filter((record) => record.agent === agent),
          (record) => record.globalUpdate,
          (record) => record.kl,
        ),
      });
    }
  }
  const all = runs.flatMap(updatesOf).filter((record) => finite(record.globalUpdate));
  const xs = all.map((record) => record.globalUpdate);
  const deltas = [...new Set(all.map((record) => record.delta).filter(finite))].sort(
    (a, b) => a - b,
  );
  const references: FigureSeries[] = deltas.map((delta) => ({
    label: `δ = ${formatValue(delta)}`,
    color: referenceColor,
    style: 'line',
    dashed: true,
    points: [
      { x: minimum(xs)!, y: delta },
      { x: maximum(xs)!, y: delta },
    ],
  }));
  return {
    id: 'kl',
    title: 'Per-agent KL per update, against δ',
    description:
      'Exact token-level KL(π_old ‖ π_new) that each update ended with; points above the dashed δ line are out of the trust region.',
    xLabel: 'update (since the run began)',
    yLabel: 'token-level KL',
    yMin: 0,
    series: withData([...series, ...references]),
    notes: runs.map((run) => {
      const updates = updatesOf(run);
      const outside = updates.filter((record) => record.inRegion === false).length;
      const meanKl = updates.length
        ? mean(updates.map((record) => (finite(record.kl) ? record.kl : 0)))
        : null;
      return `${run.label}: out of region ${outside}/${updates.length} updates (${formatPercent(updates.length ? outside / updates.length : null)}), mean KL ${formatValue(meanKl)}`;
    }),
  };
}

interface RankBucket {
  lowest: number;
  highest: number;
}

function bucketKey(bucket: RankBucket): string {
  return `${bucket.lowest}-${bucket.highest}`;
}

/** Rank buckets seen in any update, ordered by rank (rank 1 = most likely before the update). */
function rankBuckets(updates: readonly UpdateRecord[]): RankBucket[] {
  const buckets = new Map<string, RankBucket>();
  for (const record of updates) {
    for (const entry of Array.isArray(record.probabilityShiftByRank)
      ? record.probabilityShiftByRank
      : []) {
      if (!finite(entry.lowestRank) || !finite(entry.highestRank)) continue;
      const bucket = { lowest: entry.lowestRank, highest: entry.highestRank };
      buckets.set(bucketKey(bucket), bucket);
    }
  }
  return [...buckets.values()].sort((a, b) => a.lowest - b.lowest || a.highest - b.highest);
}

/** Mean over `updates` of the mass each bucket gained per position. */
function meanMassShift(
  updates: readonly UpdateRecord[],
  buckets: readonly RankBucket[],
): FigurePoint[] {
  return buckets.flatMap((bucket, index) => {
    const values = updates.flatMap((record) =>
      (Array.isArray(record.probabilityShiftByRank) ? record.probabilityShiftByRank : [])
        .filter(
          (entry) =>
            entry.lowestRank === bucket.lowest &&
            entry.highestRank === bucket.highest &&
            finite(entry.massShiftPerPosition),
        )
        .map((entry) => entry.massShiftPerPosition),
    );
    return values.length ? [{ x: index, y: mean(values) }] : [];
  });
}

export function rankShiftFigure(runs: readonly RunView[], colors: Map<string, string>): Figure {
  const buckets = rankBuckets(runs.flatMap(updatesOf));
  const series: FigureSeries[] = [];
  for (const run of runs) {
    const updates = updatesOf(run);
    const prefix = runs.length > 1 ? `${run.label} · ` : '';
    const color = colorOf(colors, run);
    for (const inRegion of [true, false]) {
      const group = updates.filter((record) => record.inRegion === inRegion);
      series.push({
        label: `${prefix}${inRegion ? 'in region' : 'out of region'} (${group.length} updates)`,
        color: inRegion ? color : shade(color, -0.5),
        style: 'bars',
        points: meanMassShift(group, buckets),
      });
    }
  }
  return {
    id: 'rank-shift',
    title: 'Probability shift by pre-update token rank',
    description:
      'Probability mass each rank bucket gained per position (mean over updates), for updates that ended inside and outside the trust region. In-region updates nudge the top ranks; out-of-region ones tend to pile mass onto rank 1.',
    xLabel: 'token rank under the old policy (1 = most likely)',
    yLabel: 'mass gained per position',
    xCategories: buckets.map((bucket) =>
      bucket.lowest === bucket.highest ? `${bucket.lowest}` : `${bucket.lowest}–${bucket.highest}`,
    ),
    series: withData(series),
    notes: runs.map((run) => {
      const updates = updatesOf(run);
      const top = (inRegion: boolean) =>
        meanMassShift(
          updates.filter((record) => record.inRegion === inRegion),
          buckets.slice(0, 1),
        )[0]?.y ?? null;
      return `${run.label}: rank-1 mass gained per position ${formatValue(top(true))} in region, ${formatValue(top(false))} out of region`;
    }),
  };
}
