import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  decimalsFor,
  formatPercent,
  formatTicks,
  formatValue,
  niceScale,
  niceStep,
} from './ticks.js';

test('niceStep picks 1, 2, 2.5 or 5 times a power of ten', () => {
  assert.equal(niceStep(10, 5), 2);
  assert.equal(niceStep(1, 4), 0.25);
  assert.equal(niceStep(16_000, 6), 5000);
  assert.equal(niceStep(0.007, 5), 0.002);
});

test('niceScale covers data far from zero whose quotient by the step rounds up', () => {
  // The counterexample fast-check found: 999,999.9999999999 / 2.5e-6 rounds to 4e11 exactly.
  const low = 999999.9999999999;
  const high = low + 0.000010000017937272789;
  const scale = niceScale({ min: low, max: high, targetTicks: 5 });
  assert.ok(scale.min <= low, `min ${scale.min} > ${low}`);
  assert.ok(scale.max >= high, `max ${scale.max} < ${high}`);
});

test('niceScale covers the data with evenly spaced ticks at multiples of the step', () => {
  fc.assert(
    fc.property(
      fc.double({ min: -1e6, max: 1e6, noNaN: true }),
      fc.double({ min: 1e-6, max: 1e6, noNaN: true }),
      (low, span) => {
        const high = low + span;
        const scale = niceScale({ min: low, max: high, targetTicks: 5 });
        // Within a millionth of a step: floating noise must not add a whole tick.
        assert.ok(scale.min <= low + 1e-6 * scale.step, `min ${scale.min} > ${low}`);
        assert.ok(scale.max >= high - 1e-6 * scale.step, `max ${scale.max} < ${high}`);
        assert.ok(
          scale.ticks.length >= 2 && scale.ticks.length <= 12,
          `${scale.ticks.length} ticks`,
        );
        for (let index = 1; index < scale.ticks.length; index++) {
          const gap = scale.ticks[index]! - scale.ticks[index - 1]!;
          const precision = 8 * Number.EPSILON * Math.abs(scale.ticks[index]!);
          assert.ok(
            Math.abs(gap - scale.step) <= 1e-6 * scale.step + precision,
            `gap ${gap} vs step ${scale.step}`,
          );
        }
        for (const tick of scale.ticks) {
          const multiple = tick / scale.step;
          assert.ok(
            Math.abs(multiple - Math.round(multiple)) <=
              1e-6 + 8 * Number.EPSILON * Math.abs(multiple),
            `${tick} is not a multiple of ${scale.step}`,
          );
        }
      },
    ),
  );
});

test('niceScale widens a constant or reversed range and survives non-finite bounds', () => {
  assert.deepEqual(niceScale({ min: 0, max: 0 }).ticks.at(0), -1);
  assert.deepEqual(niceScale({ min: 0, max: 0 }).ticks.at(-1), 1);
  const constant = niceScale({ min: 5, max: 5 });
  assert.ok(constant.min < 5 && constant.max > 5);
  assert.deepEqual(niceScale({ min: 3, max: 1 }), niceScale({ min: 1, max: 3 }));
  assert.deepEqual(
    [niceScale({ min: Number.NaN, max: 1 }).min, niceScale({ min: Number.NaN, max: 1 }).max],
    [0, 1],
  );
});

test('decimalsFor shows every multiple of the step exactly', () => {
  assert.equal(decimalsFor(1), 0);
  assert.equal(decimalsFor(0.25), 2);
  assert.equal(decimalsFor(0.002), 3);
  assert.equal(decimalsFor(5000), 0);
});

test('formatTicks: one suffix per axis, exponents for tiny steps, typographic minus', () => {
  assert.deepEqual(formatTicks([0, 5000, 10_000, 15_000], 5000), ['0', '5k', '10k', '15k']);
  assert.deepEqual(formatTicks([8000, 8500, 9000, 9500, 10_000], 500), [
    '8k',
    '8.5k',
    '9k',
    '9.5k',
    '10k',
  ]);
  assert.deepEqual(formatTicks([0, 500, 1000], 500), ['0', '500', '1000']);
  assert.deepEqual(formatTicks([1_000_000, 2_000_000], 1_000_000), ['1M', '2M']);
  assert.deepEqual(formatTicks([0.5, 0.75, 1], 0.25), ['0.50', '0.75', '1.00']);
  assert.deepEqual(formatTicks([-0.02, 0, 0.02], 0.02), ['\u22120.02', '0', '0.02']);
  assert.deepEqual(formatTicks([1e-7, 1.5e-7], 5e-8), ['1.0e\u22127', '1.5e\u22127']);
  assert.deepEqual(formatTicks([-0.001, -0.0005, 0, 0.0005], 0.0005), [
    '\u22120.0010',
    '\u22120.0005',
    '0',
    '0.0005',
  ]);
});

test('tick labels of a scale are distinct, down to spans at the limit of double precision', () => {
  fc.assert(
    fc.property(
      fc.double({ min: -1e7, max: 1e7, noNaN: true }),
      fc.double({ min: 1e-9, max: 1e7, noNaN: true }),
      (low, span) => {
        const scale = niceScale({ min: low, max: low + span });
        const labels = formatTicks(scale.ticks, scale.step);
        assert.equal(new Set(labels).size, labels.length, labels.join(' '));
      },
    ),
  );
});

test('formatValue and formatPercent never print NaN', () => {
  assert.equal(formatValue(null), 'n/a');
  assert.equal(formatValue(Number.NaN), 'n/a');
  assert.equal(formatValue(0.123456), '0.123');
  assert.equal(formatValue(12345.6), '12,346');
  assert.equal(formatValue(2e-5), '2.00e-5');
  assert.equal(formatPercent(0.4567), '45.7%');
  assert.equal(formatPercent(undefined), 'n/a');
});
