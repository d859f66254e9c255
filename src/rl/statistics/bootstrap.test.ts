import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RandomGenerator } from '../../util/random.js';
import {
  bootstrap,
  bootstrapRatio,
  clusteredBootstrap,
  pairedBootstrap,
  percentileInterval,
  resampledStatistics,
  stratifiedResamples,
} from './bootstrap.js';
import { mean, quantileOfSorted } from './descriptive.js';

const stream = (name: string) => new RandomGenerator(`bootstrap/${name}`);

describe('bootstrap', () => {
  it('is deterministic and covers the mean of a spread sample', () => {
    const values = Array.from({ length: 40 }, (_unused, index) => index / 40);
    const first = bootstrap(values, mean, { random: stream('a') });
    assert.deepEqual(bootstrap(values, mean, { random: stream('a') }), first);
    assert.ok(first.interval![0] < first.value && first.value < first.interval![1]);
    assert.equal(bootstrap([1], mean, { random: stream('a') }).interval, null);
  });

  it('draws units in order from the stream it is given', () => {
    // The first resample is units[i₁], units[i₂], … with i from the generator itself.
    const units = [1, 2, 3, 4, 5];
    const reference = stream('order');
    const expected = units.map(() => units[reference.nextInt(units.length)]!);
    const [firstDraw] = resampledStatistics(units, (sample) => Number(sample.join('')), {
      random: stream('order'),
      samples: 1,
    });
    assert.equal(firstDraw, Number(expected.join('')));
  });

  it('reads the α/2 and 1 − α/2 quantiles and drops undefined resamples', () => {
    const values = [5, Number.NaN, 1, 3, Infinity, 2, 4];
    assert.deepEqual(percentileInterval(values, 0.5), [
      quantileOfSorted([1, 2, 3, 4, 5], 0.25),
      quantileOfSorted([1, 2, 3, 4, 5], 0.75),
    ]);
    assert.equal(percentileInterval([Number.NaN]), null);
    assert.throws(() => percentileInterval([1], 0), /alpha must lie in \(0, 1\)/);
  });

  it('stratified: each stratum resampled at its own size, one stream or one per stratum', () => {
    const strata = [
      [1, 1, 1],
      [5, 6],
    ];
    const sizes = stratifiedResamples({
      strata,
      statistic: (resampled) => resampled[0]!.length * 10 + resampled[1]!.length,
      samples: 3,
      random: stream('s'),
    });
    assert.deepEqual(sizes, [32, 32, 32]);
    // One stream per stratum: stratum 1's draws do not depend on stratum 0's size.
    const secondOf = (first: number[]) =>
      stratifiedResamples({
        strata: [first, [5, 6, 7, 8]],
        statistic: (resampled) => Number(resampled[1]!.join('')),
        samples: 4,
        random: [stream('x'), stream('y')],
      });
    assert.deepEqual(secondOf([1]), secondOf([1, 2, 3, 4, 5, 6]));
    assert.throws(
      () => stratifiedResamples({ strata, statistic: () => 0, samples: 1, random: [stream('x')] }),
      /1 random streams for 2 strata/,
    );
  });

  it('paired: the pair is the unit, so a shared baseline cancels', () => {
    // Baselines spread widely across seeds; the second schedule is ahead by 0.02 on every seed.
    const first = [0.2, 0.5, 0.35, 0.7, 0.1, 0.6];
    const second = first.map((value) => value + 0.02);
    const paired = pairedBootstrap({ first, second, random: stream('p') });
    assert.ok(Math.abs(paired.value - 0.02) < 1e-12);
    assert.ok(Math.abs(paired.interval![0] - 0.02) < 1e-12);
    assert.ok(Math.abs(paired.interval![1] - 0.02) < 1e-12);
    // Unpaired, the seed spread swamps the difference.
    const unpaired = bootstrap([...first, ...second], mean, { random: stream('u') });
    assert.ok(unpaired.interval![1] - unpaired.interval![0] > 0.2);
    assert.throws(() => pairedBootstrap({ first: [1], second: [], random: stream('p') }), /pair/);
  });

  it('clustered: correlated members stay together, so the interval is wider than naive', () => {
    // 12 clusters of 10 identical values: 12 independent numbers, not 120.
    const noise = stream('clusters');
    const clusters = Array.from({ length: 12 }, () => {
      const level = noise.normal();
      return Array.from({ length: 10 }, () => level);
    });
    const clustered = clusteredBootstrap({ clusters, random: stream('c') });
    const naive = bootstrap(clusters.flat(), mean, { random: stream('c') });
    assert.equal(clustered.value, mean(clusters.flat()));
    const width = (estimate: typeof naive) => estimate.interval![1] - estimate.interval![0];
    assert.ok(width(clustered) > 2.5 * width(naive), `${width(clustered)} vs ${width(naive)}`);
  });

  it('ratio: resamples numerator and denominator on their own streams', () => {
    const ratio = bootstrapRatio([2, 4, 6], [1, 2, 3], mean, {
      numerator: stream('n'),
      denominator: stream('d'),
    });
    assert.equal(ratio.value, 2);
    assert.ok(ratio.interval![0] < 2 && 2 < ratio.interval![1]);
  });
});
