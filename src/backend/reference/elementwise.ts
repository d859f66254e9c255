import type { AdamWArguments } from '../types.js';

/** Logistic sigmoid; 1/(1 + e^(−x)) saturates cleanly to 0 and 1 at both ends. */
function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** out = silu(gate)·up with silu(x) = x·sigmoid(x). */
export function swiglu(gate: Float32Array, up: Float32Array, output: Float32Array): void {
  for (let i = 0; i < gate.length; i++) {
    const x = gate[i];
    output[i] = x * sigmoid(x) * up[i];
  }
}

/**
 * d/dgate = g·up·σ(x)·(1 + x·(1 − σ(x))), d/dup = g·silu(x); both accumulated (beta 1) or
 * written as 0 + the derivative (beta 0).
 */
export function swigluBackward(
  gate: Float32Array,
  up: Float32Array,
  gradOutput: Float32Array,
  gradGate: Float32Array,
  gradUp: Float32Array,
  beta = 1,
): void {
  for (let i = 0; i < gate.length; i++) {
    const x = gate[i];
    const s = sigmoid(x);
    const g = gradOutput[i];
    gradGate[i] = (beta === 0 ? 0 : gradGate[i]) + g * up[i] * s * (1 + x * (1 - s));
    gradUp[i] = (beta === 0 ? 0 : gradUp[i]) + g * x * s;
  }
}

const GELU_SCALE = Math.sqrt(2 / Math.PI);
const GELU_CUBIC = 0.044715;

/** GELU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function gelu(input: Float32Array, output: Float32Array): void {
  for (let i = 0; i < input.length; i++) {
    const x = input[i];
    output[i] = 0.5 * x * (1 + Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x)));
  }
}

/** Accumulates g·d/dx gelu(x) into gradInput. */
export function geluBackward(
  input: Float32Array,
  gradOutput: Float32Array,
  gradInput: Float32Array,
): void {
  for (let i = 0; i < input.length; i++) {
    const x = input[i];
    const t = Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
    const innerDerivative = GELU_SCALE * (1 + 3 * GELU_CUBIC * x * x);
    // (1 − t²) is exactly 0 once |x| is large; skip the product so x³ cannot turn it into NaN.
    const slope = t === 1 || t === -1 ? 0 : 0.5 * x * (1 - t * t) * innerDerivative;
    gradInput[i] += gradOutput[i] * (0.5 * (1 + t) + slope);
  }
}

/**
 * One AdamW step (Loshchilov & Hutter), in PyTorch's formulation: decoupled decay
 * p ← p·(1 − lr·λ), then m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g²,
 * p ← p − (lr / (1−β₁ᵗ))·m / (√v / √(1−β₂ᵗ) + ε).
 */
export function adamw(args: AdamWArguments): void {
  const { parameter, gradient, firstMoment, secondMoment } = args;
  const { learningRate, beta1, beta2, epsilon, weightDecay, step } = args;
  const gradientScale = args.gradientScale ?? 1;
  const stepSize = learningRate / (1 - Math.pow(beta1, step));
  const inverseSqrtCorrection2 = 1 / Math.sqrt(1 - Math.pow(beta2, step));
  const decay = 1 - learningRate * weightDecay;
  for (let i = 0; i < parameter.length; i++) {
    const g = gradient[i] * gradientScale;
    const m = beta1 * firstMoment[i] + (1 - beta1) * g;
    const v = beta2 * secondMoment[i] + (1 - beta2) * g * g;
    firstMoment[i] = m;
    secondMoment[i] = v;
    const denominator = Math.sqrt(v) * inverseSqrtCorrection2 + epsilon;
    parameter[i] = parameter[i] * decay - (stepSize * m) / denominator;
  }
}

/** Σ x² accumulated in float64. */
export function sumOfSquares(input: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < input.length; i++) sum += input[i] * input[i];
  return sum;
}

/** y += alpha·x */
export function axpy(alpha: number, x: Float32Array, y: Float32Array, beta = 1): void {
  for (let i = 0; i < x.length; i++) y[i] = (beta === 0 ? 0 : y[i]) + alpha * x[i];
}

/** output = a + fround(scale·b): the product rounded to float32 before the (float32) sum. */
export function addScaled(
  a: Float32Array,
  b: Float32Array,
  scale: number,
  output: Float32Array,
): void {
  for (let i = 0; i < a.length; i++) output[i] = a[i] + Math.fround(scale * b[i]);
}
