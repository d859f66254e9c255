import { getBackend } from '../../backend/index.js';
import { allocate } from '../memory.js';
import { broadcastMap, broadcastShapes, materialize } from '../broadcast.js';
import { ShapeError } from '../../util/errors.js';
import {
  createResult,
  formatShape,
  gradientOf,
  gradientToWrite,
  scalar,
  shapeSize,
  Tensor,
} from '../tensor.js';

/**
 * Element-wise ops with NumPy broadcasting. Each op's forward rule stands next to its gradient
 * rule. Most run in TypeScript: they are memory-bound and small next to the fused kernels the
 * model uses (norms, SwiGLU, attention live in the backends). The two a model runs on every
 * layer of every decode step, the residual add and a LoRA layer's base + s·up, are one
 * backend call each (`addScaled`): a JavaScript loop over a 16 × 576 activation cost ~40 µs,
 * the call ~3 µs, most of it the op's fixed cost.
 */

interface BinaryRule {
  name: string;
  forward(a: number, b: number): number;
  /** ∂out/∂a given a, b and out. */
  gradientA(a: number, b: number, out: number): number;
  /** ∂out/∂b given a, b and out. */
  gradientB(a: number, b: number, out: number): number;
}

function binary(rule: BinaryRule, left: Tensor | number, right: Tensor | number): Tensor {
  const a = typeof left === 'number' ? scalar(left) : left;
  const b = typeof right === 'number' ? scalar(right) : right;
  const outputShape = broadcastShapes(a.shape, b.shape);
  const size = shapeSize(outputShape);
  const indexA = materialize(broadcastMap(a.shape, outputShape), size);
  const indexB = materialize(broadcastMap(b.shape, outputShape), size);
  const dataA = a.data;
  const dataB = b.data;
  const output = allocate(size);
  if (indexA === null && indexB === null) {
    for (let index = 0; index < size; index++)
      output[index] = rule.forward(dataA[index]!, dataB[index]!);
  } else {
    for (let index = 0; index < size; index++) {
      output[index] = rule.forward(
        dataA[indexA ? indexA[index]! : index]!,
        dataB[indexB ? indexB[index]! : index]!,
      );
    }
  }
  return createResult(output, outputShape, rule.name, [a, b], (gradOutput) => {
    const values = output;
    if (a.requiresGrad) {
      const gradA = gradientOf(a);
      for (let index = 0; index < size; index++) {
        const ia = indexA ? indexA[index]! : index;
        const ib = indexB ? indexB[index]! : index;
        gradA[ia]! += gradOutput[index]! * rule.gradientA(dataA[ia]!, dataB[ib]!, values[index]!);
      }
    }
    if (b.requiresGrad) {
      const gradB = gradientOf(b);
      for (let index = 0; index < size; index++) {
        const ia = indexA ? indexA[index]! : index;
        const ib = indexB ? indexB[index]! : index;
        gradB[ib]! += gradOutput[index]! * rule.gradientB(dataA[ia]!, dataB[ib]!, values[index]!);
      }
    }
  });
}

const addRule: BinaryRule = {
  name: 'add',
  forward: (a, b) => a + b,
  gradientA: () => 1,
  gradientB: () => 1,
};
const subtractRule: BinaryRule = {
  name: 'subtract',
  forward: (a, b) => a - b,
  gradientA: () => 1,
  gradientB: () => -1,
};
const multiplyRule: BinaryRule = {
  name: 'multiply',
  forward: (a, b) => a * b,
  gradientA: (_a, b) => b,
  gradientB: (a) => a,
};
const divideRule: BinaryRule = {
  name: 'divide',
  forward: (a, b) => a / b,
  gradientA: (_a, b) => 1 / b,
  gradientB: (a, b) => -a / (b * b),
};
// Ties send the gradient to `a`, as PyTorch's maximum/minimum split it is not needed here.
const maximumRule: BinaryRule = {
  name: 'maximum',
  forward: (a, b) => (a >= b || Number.isNaN(a) ? a : b),
  gradientA: (a, b) => (a >= b ? 1 : 0),
  gradientB: (a, b) => (a >= b ? 0 : 1),
};
const minimumRule: BinaryRule = {
  name: 'minimum',
  forward: (a, b) => (a <= b || Number.isNaN(a) ? a : b),
  gradientA: (a, b) => (a <= b ? 1 : 0),
  gradientB: (a, b) => (a <= b ? 0 : 1),
};

/**
 * a + s·b for tensors of one shape, in one pass: the product rounded to float32, then the sum
 * (backend `addScaled`, the same bits on every backend, never a fused multiply-add). A LoRA
 * layer's output is `addScaled(base, up, scaling)`; decode steps and scoring passes both run
 * it, so it needs no fixed summation order to keep their log-probs equal.
 */
export function addScaled(a: Tensor, b: Tensor, scale: number): Tensor {
  if (!sameShape(a, b)) {
    throw new ShapeError(
      `addScaled: a ${formatShape(a.shape)} and b ${formatShape(b.shape)} must have one shape`,
    );
  }
  const backend = getBackend();
  const output = allocate(a.size);
  backend.addScaled({ a: a.data, b: b.data, scale, output });
  return createResult(output, a.shape, 'addScaled', [a, b], (gradOutput) => {
    // ∂/∂a = 1, ∂/∂b = s: no sampled value depends on a gradient's rounding.
    for (const [input, alpha] of [
      [a, 1],
      [b, scale],
    ] as const) {
      if (!input.requiresGrad) continue;
      const { gradient, beta } = gradientToWrite(input);
      backend.axpy({ alpha, x: gradOutput, y: gradient, beta });
    }
  });
}

export function add(a: Tensor | number, b: Tensor | number): Tensor {
  // Same shapes (the residual stream's hot path): a + 1·b, which rounds exactly as a + b.
  if (a instanceof Tensor && b instanceof Tensor && a.size === b.size && sameShape(a, b)) {
    return addScaled(a, b, 1);
  }
  if (a instanceof Tensor && b instanceof Tensor && isRowVector(b, a)) return addRow(a, b);
  return binary(addRule, a, b);
}

/** Whether `row` is 1-D with the length of `matrix`'s last axis (a Linear's bias). */
function isRowVector(row: Tensor, matrix: Tensor): boolean {
  return row.shape.length === 1 && matrix.shape.length >= 1 && row.size === matrix.shape.at(-1);
}

/**
 * input [..., n] + row [n] (a Linear's bias, added after every product of Qwen2's query, key
 * and value projections): the row copied under every row of the output, then one backend
 * `addScaled` with scale 1, which rounds exactly as input + row. The broadcasting loop it
 * replaces ran in JavaScript with an index per element: most of the 0.67–0.76 s of JavaScript
 * between the kernels of a LoRA step at Qwen2.5-1.5B's shape, 0.12 s with this. The gradients
 * are the broadcasting rule's, in its order: the input's all of the output's (axpy), the row's
 * the sum over rows, in row order.
 */
function addRow(input: Tensor, row: Tensor): Tensor {
  const backend = getBackend();
  const columns = row.size;
  const rows = input.size / columns;
  const output = allocate(input.size);
  for (let index = 0; index < rows; index++) output.set(row.data, index * columns);
  backend.addScaled({ a: input.data, b: output, scale: 1, output });
  return createResult(output, input.shape, 'add', [input, row], (gradOutput) => {
    if (input.requiresGrad) {
      const { gradient, beta } = gradientToWrite(input);
      backend.axpy({ alpha: 1, x: gradOutput, y: gradient, beta });
    }
    if (row.requiresGrad) {
      const gradient = gradientOf(row);
      for (let index = 0; index < rows; index++)
        for (let column = 0; column < columns; column++)
          gradient[column]! += gradOutput[index * columns + column]!;
    }
  });
}

export const subtract = (a: Tensor | number, b: Tensor | number): Tensor =>
  binary(subtractRule, a, b);
export const multiply = (a: Tensor | number, b: Tensor | number): Tensor =>
  binary(multiplyRule, a, b);
export const divide = (a: Tensor | number, b: Tensor | number): Tensor => binary(divideRule, a, b);
export const maximum = (a: Tensor | number, b: Tensor | number): Tensor =>
  binary(maximumRule, a, b);
export const minimum = (a: Tensor | number, b: Tensor | number): Tensor =>
  binary(minimumRule, a, b);

function sameShape(a: Tensor, b: Tensor): boolean {
  return (
    a.shape.length === b.shape.length &&
    a.shape.every((dimension, index) => dimension === b.shape[index])
  );
}

interface UnaryRule {
  name: string;
  forward(x: number): number;
  /** ∂out/∂x given x and out. */
  gradient(x: number, out: number): number;
}

function unary(rule: UnaryRule, input: Tensor): Tensor {
  const size = input.size;
  const data = input.data;
  const output = allocate(size);
  for (let index = 0; index < size; index++) output[index] = rule.forward(data[index]!);
  return createResult(output, input.shape, rule.name, [input], (gradOutput) => {
    const gradient = gradientOf(input);
    for (let index = 0; index < size; index++) {
      gradient[index]! += gradOutput[index]! * rule.gradient(data[index]!, output[index]!);
    }
  });
}

const sigmoidValue = (x: number): number =>
  x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));

export const negate = (x: Tensor): Tensor =>
  unary({ name: 'negate', forward: (v) => -v, gradient: () => -1 }, x);
export const exp = (x: Tensor): Tensor =>
  unary({ name: 'exp', forward: Math.exp, gradient: (_v, out) => out }, x);
export const log = (x: Tensor): Tensor =>
  unary({ name: 'log', forward: Math.log, gradient: (v) => 1 / v }, x);
export const tanh = (x: Tensor): Tensor =>
  unary({ name: 'tanh', forward: Math.tanh, gradient: (_v, out) => 1 - out * out }, x);
export const sigmoid = (x: Tensor): Tensor =>
  unary({ name: 'sigmoid', forward: sigmoidValue, gradient: (_v, out) => out * (1 - out) }, x);
export const silu = (x: Tensor): Tensor =>
  unary(
    {
      name: 'silu',
      forward: (v) => v * sigmoidValue(v),
      gradient: (v) => {
        const s = sigmoidValue(v);
        return s * (1 + v * (1 - s));
      },
    },
    x,
  );
export const sqrt = (x: Tensor): Tensor =>
  unary({ name: 'sqrt', forward: Math.sqrt, gradient: (_v, out) => 0.5 / out }, x);
export const abs = (x: Tensor): Tensor =>
  unary({ name: 'abs', forward: Math.abs, gradient: (v) => Math.sign(v) }, x);
export const square = (x: Tensor): Tensor =>
  unary({ name: 'square', forward: (v) => v * v, gradient: (v) => 2 * v }, x);
export const scale = (x: Tensor, factor: number): Tensor =>
  unary({ name: 'scale', forward: (v) => v * factor, gradient: () => factor }, x);

/** Clamps into [low, high]; the gradient is 1 strictly inside, 0 where clamped. */
export function clamp(x: Tensor, low: number, high: number): Tensor {
  return unary(
    {
      name: 'clamp',
      forward: (v) => (v < low ? low : v > high ? high : v),
      gradient: (v) => (v < low || v > high ? 0 : 1),
    },
    x,
  );
}

/**
 * Selects `a` where `condition` is non-zero, else `b` (all broadcast to one shape). The
 * condition carries no gradient.
 */
export function where(condition: Tensor, a: Tensor | number, b: Tensor | number): Tensor {
  const left = typeof a === 'number' ? scalar(a) : a;
  const right = typeof b === 'number' ? scalar(b) : b;
  const outputShape = broadcastShapes(broadcastShapes(condition.shape, left.shape), right.shape);
  const size = shapeSize(outputShape);
  const indexCondition = materialize(broadcastMap(condition.shape, outputShape), size);
  const indexA = materialize(broadcastMap(left.shape, outputShape), size);
  const indexB = materialize(broadcastMap(right.shape, outputShape), size);
  const conditionData = condition.data;
  const dataA = left.data;
  const dataB = right.data;
  const output = allocate(size);
  const chooseA = new Uint8Array(size);
  for (let index = 0; index < size; index++) {
    chooseA[index] = conditionData[indexCondition ? indexCondition[index]! : index] !== 0 ? 1 : 0;
    output[index] = chooseA[index]
      ? dataA[indexA ? indexA[index]! : index]!
      : dataB[indexB ? indexB[index]! : index]!;
  }
  return createResult(output, outputShape, 'where', [left, right], (gradOutput) => {
    if (left.requiresGrad) {
      const gradient = gradientOf(left);
      for (let index = 0; index < size; index++) {
        if (chooseA[index]) gradient[indexA ? indexA[index]! : index]! += gradOutput[index]!;
      }
    }
    if (right.requiresGrad) {
      const gradient = gradientOf(right);
      for (let index = 0; index < size; index++) {
        if (!chooseA[index]) gradient[indexB ? indexB[index]! : index]! += gradOutput[index]!;
      }
    }
  });
}
