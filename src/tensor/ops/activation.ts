import { getBackend } from '../../backend/index.js';
import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import { createResult, formatShape, gradientOf, gradientToWrite, Tensor } from '../tensor.js';

function lastAxis(input: Tensor, operation: string): { rows: number; columns: number } {
  if (input.rank < 1) throw new ShapeError(`${operation} needs rank ≥ 1, got a scalar`);
  const columns = input.shape[input.rank - 1]!;
  return { rows: columns === 0 ? 0 : input.size / columns, columns };
}

/** Softmax over the last axis (max-subtracted, stable for any finite logits). */
export function softmax(input: Tensor): Tensor {
  const { rows, columns } = lastAxis(input, 'softmax');
  const output = allocate(input.size);
  getBackend().softmax({ input: input.data, output, rows, columns });
  return createResult(output, input.shape, 'softmax', [input], (gradOutput) => {
    // dx = y ⊙ (dy − Σ dy·y)
    const gradient = gradientOf(input);
    for (let row = 0; row < rows; row++) {
      const offset = row * columns;
      let dot = 0;
      for (let column = 0; column < columns; column++)
        dot += gradOutput[offset + column]! * output[offset + column]!;
      for (let column = 0; column < columns; column++) {
        gradient[offset + column]! +=
          output[offset + column]! * (gradOutput[offset + column]! - dot);
      }
    }
  });
}

/** Log-softmax over the last axis. */
export function logSoftmax(input: Tensor): Tensor {
  const { rows, columns } = lastAxis(input, 'logSoftmax');
  const output = allocate(input.size);
  getBackend().logSoftmax({ input: input.data, output, rows, columns });
  return createResult(output, input.shape, 'logSoftmax', [input], (gradOutput) => {
    // dx = dy − softmax · Σ dy
    const gradient = gradientOf(input);
    for (let row = 0; row < rows; row++) {
      const offset = row * columns;
      let total = 0;
      for (let column = 0; column < columns; column++) total += gradOutput[offset + column]!;
      for (let column = 0; column < columns; column++) {
        gradient[offset + column]! +=
          gradOutput[offset + column]! - Math.exp(output[offset + column]!) * total;
      }
    }
  });
}

/** SwiGLU: silu(gate) ⊙ up, fused in the backend. */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  if (gate.size !== up.size) {
    throw new ShapeError(
      `swiglu: gate ${formatShape(gate.shape)} and up ${formatShape(up.shape)} differ`,
    );
  }
  const backend = getBackend();
  const output = allocate(gate.size);
  backend.swiglu({ gate: gate.data, up: up.data, output });
  return createResult(output, gate.shape, 'swiglu', [gate, up], (gradOutput) => {
    // One call writes both gradients: it may write them (beta 0) only when both are new.
    const write = !gate.grad && !up.grad && gate !== up;
    const gradient = (input: Tensor) =>
      write ? gradientToWrite(input).gradient : gradientOf(input);
    backend.swigluBackward({
      gate: gate.data,
      up: up.data,
      gradOutput,
      gradGate: gradient(gate),
      gradUp: gradient(up),
      beta: write ? 0 : 1,
    });
  });
}

/** GELU with the tanh approximation (GPT-2). */
export function gelu(input: Tensor): Tensor {
  const backend = getBackend();
  const output = allocate(input.size);
  backend.gelu({ input: input.data, output });
  return createResult(output, input.shape, 'gelu', [input], (gradOutput) => {
    backend.geluBackward({ input: input.data, gradOutput, gradInput: gradientOf(input) });
  });
}
