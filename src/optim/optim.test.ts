import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parameter } from '../tensor/index.js';
import { AdamW } from './adamw.js';
import { clipGradientNorm } from './clip.js';
import { learningRateAt } from './schedule.js';

describe('optimization', () => {
  test('AdamW matches a hand-computed first and second step', () => {
    const weight = parameter(Float32Array.from([1, -2]), [2]);
    const optimizer = new AdamW([{ name: 'w', tensor: weight }], {
      learningRate: 0.1,
      beta1: 0.9,
      beta2: 0.99,
      epsilon: 1e-8,
      weightDecay: 0.5,
    });
    weight.grad = Float32Array.from([0.5, 0.25]);
    optimizer.update();
    // Step 1: m̂ = g, v̂ = g², update = g/|g| = sign(g); decay: θ ← θ − lr·λ·θ first.
    // w0: 1 − 0.1·0.5·1 − 0.1·1 = 0.85 ; w1: −2 − 0.1·0.5·(−2) − 0.1·1 = −2.0
    assert.ok(Math.abs(weight.data[0]! - 0.85) < 1e-6, String(weight.data[0]));
    assert.ok(Math.abs(weight.data[1]! + 2.0) < 1e-6, String(weight.data[1]));
    weight.grad = Float32Array.from([-0.5, 0.25]);
    optimizer.update();
    // w0: m = 0.9·0.05 + 0.1·(−0.5) = −0.005, m̂ = −0.005/0.19; v = 0.99·0.0025 + 0.01·0.25 = 0.004975, v̂ = 0.004975/0.0199
    const mHat = -0.005 / 0.19;
    const vHat = 0.004975 / 0.0199;
    const expected = 0.85 - 0.1 * 0.5 * 0.85 - (0.1 * mHat) / (Math.sqrt(vHat) + 1e-8);
    assert.ok(Math.abs(weight.data[0]! - expected) < 1e-6, `${weight.data[0]} vs ${expected}`);
  });

  test('optimizer state round trip continues identically, and a mismatch is refused', () => {
    const make = () => parameter(Float32Array.from([0.3, 0.1, -0.2]), [3]);
    const [a, b] = [make(), make()];
    const first = new AdamW([{ name: 'w', tensor: a }]);
    a.grad = Float32Array.from([1, 2, 3]);
    first.update();
    b.data.set(a.data);
    const second = new AdamW([{ name: 'w', tensor: b }]);
    second.loadStateDict(first.stateDict());
    a.grad = Float32Array.from([0.1, -0.2, 0.3]);
    b.grad = Float32Array.from([0.1, -0.2, 0.3]);
    first.update();
    second.update();
    assert.deepEqual(Array.from(a.data), Array.from(b.data));
    const other = new AdamW([{ name: 'v', tensor: parameter(new Float32Array(3), [3]) }]);
    assert.throws(() => other.loadStateDict(first.stateDict()), /missing "v.first_moment"/);
  });

  test('global-norm clipping scale', () => {
    const a = parameter(new Float32Array(2), [2]);
    const b = parameter(new Float32Array(1), [1]);
    a.grad = Float32Array.from([3, 0]);
    b.grad = Float32Array.from([4]);
    const clipped = clipGradientNorm(
      [
        { name: 'a', tensor: a },
        { name: 'b', tensor: b },
      ],
      1,
    );
    assert.equal(clipped.norm, 5);
    assert.ok(Math.abs(clipped.scale - 0.2) < 1e-12);
    assert.equal(clipGradientNorm([{ name: 'a', tensor: a }], 10).scale, 1);
  });

  test('warmup + cosine schedule', () => {
    const schedule = {
      kind: 'warmup-cosine' as const,
      warmupSteps: 10,
      totalSteps: 110,
      minimumRatio: 0.1,
    };
    assert.ok(Math.abs(learningRateAt(schedule, 1, 0) - 0.1) < 1e-12);
    assert.equal(learningRateAt(schedule, 1, 9), 1);
    assert.ok(Math.abs(learningRateAt(schedule, 1, 60) - 0.55) < 1e-12);
    assert.ok(Math.abs(learningRateAt(schedule, 1, 110) - 0.1) < 1e-12);
    assert.equal(learningRateAt({ kind: 'constant' }, 0.3, 1000), 0.3);
  });
});
