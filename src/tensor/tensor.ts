import { roundToBfloat16, widenBfloat16 } from '../backend/bfloat16.js';
import { ShapeError } from '../util/errors.js';
import {
  allocate,
  allocateZeroed,
  disown,
  keep,
  release,
  track,
  type Disposable,
} from './memory.js';

/**
 * The backward rule of one op: given the gradient of the op's output, accumulate the gradient
 * of each input that requires one (via `gradientOf(input)`, which allocates it zeroed).
 */
export interface GradientNode {
  readonly operation: string;
  readonly inputs: readonly Tensor[];
  backward(gradOutput: Float32Array): void;
  /** Frees what the forward pass saved for backward (called once backward has run). */
  release?(): void;
}

let gradientEnabled = true;

/** Whether ops record the graph. */
export function isGradientEnabled(): boolean {
  return gradientEnabled;
}

/** Runs `fn` without recording gradients (inference, scoring, sampling). */
export function noGrad<T>(fn: () => T): T {
  const previous = gradientEnabled;
  gradientEnabled = false;
  try {
    return fn();
  } finally {
    gradientEnabled = previous;
  }
}

export function shapeSize(shape: readonly number[]): number {
  let size = 1;
  for (const dimension of shape) size *= dimension;
  return size;
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * A dense, contiguous, row-major float32 tensor. Shapes never alias memory: reshape copies
 * nothing but transpose and slice produce new buffers. Ops that need a transposed operand
 * (matmul) take flags instead, so the hot path never copies.
 */
export class Tensor implements Disposable {
  readonly shape: readonly number[];
  readonly size: number;
  requiresGrad: boolean;
  /** Accumulated gradient, same layout as data; allocated by backward. */
  grad: Float32Array | null = null;
  gradientNode: GradientNode | null = null;
  /** A parameter (or any tensor marked persistent) is never disposed by `tidy`. */
  persistent = false;
  private storage: Float32Array | null;
  /** The values as bfloat16 bit patterns, for a frozen weight stored that way (else null). */
  private bfloat16Storage: Uint16Array | null = null;

  constructor(data: Float32Array, shape: readonly number[], requiresGrad = false) {
    const size = shapeSize(shape);
    if (data.length !== size) {
      throw new ShapeError(
        `data of length ${data.length} does not fit shape ${formatShape(shape)} (size ${size})`,
      );
    }
    for (const dimension of shape) {
      if (!Number.isInteger(dimension) || dimension < 0) {
        throw new ShapeError(
          `invalid shape ${formatShape(shape)}: dimensions must be integers ≥ 0`,
        );
      }
    }
    this.shape = Object.freeze([...shape]);
    this.size = size;
    this.storage = data;
    this.requiresGrad = requiresGrad;
    track(this);
  }

  /**
   * The values. For a tensor stored in bfloat16 (see `storeAsBfloat16`) this is a fresh float32
   * copy (exact) made on every access: reading it (state dicts, exports, checks) works as for
   * any tensor, but writing into it changes nothing; ops that handle bfloat16 (matmul's B,
   * embedding tables) read `bfloat16` instead.
   */
  get data(): Float32Array {
    if (this.bfloat16Storage) return widenBfloat16(this.bfloat16Storage);
    if (this.storage === null) {
      throw new Error('tensor used after dispose (kept outside its tidy scope? call keep())');
    }
    return this.storage;
  }

  /** The bfloat16 bit patterns of a tensor stored in bfloat16, else null. */
  get bfloat16(): Uint16Array | null {
    return this.bfloat16Storage;
  }

  get dtype(): 'float32' | 'bfloat16' {
    return this.bfloat16Storage ? 'bfloat16' : 'float32';
  }

  /**
   * Keeps this (frozen) tensor in bfloat16 from now on: its values are rounded to nearest
   * bfloat16 (ties to even) and the float32 array is dropped, halving its memory and the bytes
   * every product with it reads. Only for tensors that never receive a gradient: no op writes a
   * gradient for a bfloat16 tensor, so one that requires grad is refused. Irreversible, except
   * by `assignFloat32` (which stores new values, rounded).
   */
  storeAsBfloat16(): this {
    if (this.requiresGrad) {
      throw new Error(
        `a tensor of shape ${formatShape(this.shape)} that requires grad cannot be stored in bfloat16: only frozen weights can`,
      );
    }
    if (this.bfloat16Storage) return this;
    this.bfloat16Storage = roundToBfloat16(this.data);
    // Dropped, not released to the pool: a weight's buffer (up to hundreds of MB) is not an
    // activation-sized buffer worth keeping for reuse.
    this.storage = null;
    return this;
  }

  /**
   * Writes new values (loading a state dict): copied for a float32 tensor, rounded to nearest
   * bfloat16 for one stored in bfloat16 (whose `data` is only a copy).
   */
  assignFloat32(values: Float32Array): void {
    if (values.length !== this.size)
      throw new ShapeError(`${values.length} values for a tensor of size ${this.size}`);
    if (this.bfloat16Storage) this.bfloat16Storage = roundToBfloat16(values);
    else this.data.set(values);
  }

  get rank(): number {
    return this.shape.length;
  }

  get isDisposed(): boolean {
    return this.storage === null && this.bfloat16Storage === null;
  }

  /** Marks the tensor as persistent: `tidy` leaves it alone. */
  keep(): this {
    this.persistent = true;
    return keep(this);
  }

  dispose(): void {
    if (this.persistent || this.isDisposed) return;
    if (this.storage) release(this.storage);
    this.forget();
  }

  /** Drops the values (without releasing them), the gradient and what backward saved. */
  private forget(): void {
    this.storage = null;
    this.bfloat16Storage = null;
    if (this.grad) release(this.grad);
    this.grad = null;
    this.gradientNode?.release?.();
    this.gradientNode = null;
  }

  /**
   * Hands the values' buffer to the caller and leaves this tensor disposed: what
   * `data.slice()` followed by `dispose()` gives, without the copy or a new buffer. The caller
   * owns the array: give it back to the pool with `release` once done with it (then never touch
   * it again), or drop it for the garbage collector. (Copying scoring's log-distributions,
   * rows × vocabulary floats, out of their `tidy` scope faulted in a new 64 MB array each.)
   */
  takeData(): Float32Array {
    if (this.persistent)
      throw new Error(
        `takeData() on a persistent tensor of shape ${formatShape(this.shape)}: copy its data instead`,
      );
    const values = this.data;
    if (this.storage) disown(this.storage);
    this.forget();
    return values;
  }

  /** Frees this tensor's memory even if persistent. */
  destroy(): void {
    this.persistent = false;
    this.dispose();
  }

  /** The single value of a one-element tensor. */
  item(): number {
    if (this.size !== 1)
      throw new ShapeError(`item() needs one element, got shape ${formatShape(this.shape)}`);
    return this.data[0]!;
  }

  toArray(): number[] {
    return Array.from(this.data);
  }

  /** A copy detached from the graph. */
  detach(): Tensor {
    const copy = allocate(this.size);
    copy.set(this.data);
    return new Tensor(copy, this.shape, false);
  }

  zeroGrad(): void {
    if (this.grad) release(this.grad);
    this.grad = null;
  }

  /**
   * Backpropagates from this tensor. A scalar needs no gradient argument (d self = 1);
   * otherwise pass dLoss/dself. Topological order, then one reverse loop (as micrograd).
   */
  backward(gradient?: Float32Array): void {
    if (!this.requiresGrad) {
      throw new Error('backward() on a tensor that does not require grad (created under noGrad?)');
    }
    if (!gradient && this.size !== 1) {
      throw new ShapeError(
        `backward() without a gradient needs a scalar, got shape ${formatShape(this.shape)}`,
      );
    }
    if (gradient && gradient.length !== this.size) {
      throw new ShapeError(`gradient of length ${gradient.length} for tensor of size ${this.size}`);
    }
    const seed = gradientOf(this);
    if (gradient) for (let index = 0; index < this.size; index++) seed[index]! += gradient[index]!;
    else seed[0]! += 1;
    propagate([this]);
  }
}

/**
 * Backpropagates from several tensors of one graph at once, each seeded with its gradient
 * (added to any it holds): one topological order over all of them, so a tensor that several
 * of them depend on passes its gradient on once, complete. Separate backward calls could not:
 * the first would release the shared part of the graph with only its own share.
 */
export function backwardFrom(
  roots: ReadonlyArray<{ tensor: Tensor; gradient: Float32Array }>,
): void {
  for (const { tensor, gradient } of roots) {
    if (!tensor.requiresGrad || gradient.length !== tensor.size)
      throw new ShapeError(
        `backwardFrom: a gradient of length ${gradient.length} for a tensor of shape ${formatShape(tensor.shape)}${tensor.requiresGrad ? '' : ' that does not require grad'}`,
      );
    const seed = gradientOf(tensor);
    for (let index = 0; index < tensor.size; index++) seed[index]! += gradient[index]!;
  }
  propagate(roots.map(({ tensor }) => tensor));
}

/** The reverse loop over the graph behind `roots`, whose gradients are seeded; they keep them. */
function propagate(roots: readonly Tensor[]): void {
  const order = topologicalOrder(roots);
  const kept = new Set(roots);
  for (let index = order.length - 1; index >= 0; index--) {
    const tensor = order[index]!;
    const node = tensor.gradientNode!;
    if (tensor.grad) node.backward(tensor.grad);
    node.release?.();
    tensor.gradientNode = null;
    // Intermediate gradients are not needed once propagated.
    if (!kept.has(tensor) && tensor.grad) {
      release(tensor.grad);
      tensor.grad = null;
    }
  }
}

function topologicalOrder(roots: readonly Tensor[]): Tensor[] {
  const order: Tensor[] = [];
  const visited = new Set<Tensor>();
  // Iterative depth-first search: graphs of deep models overflow a recursive one.
  const stack = roots.map((tensor) => ({ tensor, expanded: false }));
  while (stack.length > 0) {
    const entry = stack.pop()!;
    if (entry.expanded) {
      order.push(entry.tensor);
      continue;
    }
    if (visited.has(entry.tensor) || !entry.tensor.gradientNode) continue;
    visited.add(entry.tensor);
    stack.push({ tensor: entry.tensor, expanded: true });
    for (const input of entry.tensor.gradientNode.inputs) {
      if (input.requiresGrad && !visited.has(input)) stack.push({ tensor: input, expanded: false });
    }
  }
  return order;
}

/** The gradient buffer of `tensor`, allocated zeroed on first use; backward rules add into it. */
export function gradientOf(tensor: Tensor): Float32Array {
  if (!tensor.grad) tensor.grad = allocateZeroed(tensor.size);
  return tensor.grad;
}

/**
 * The gradient buffer of `tensor` for a backward rule whose kernel can write its output or add
 * to it (the kernel's beta): on first use a buffer that is not zero-filled, with `beta` 0, since
 * the kernel writes every entry; afterwards the gradient held, with `beta` 1. Writing gives the
 * bits adding to zeros would: the kernels write 0 + the value (−0 becomes +0, as when added to a
 * zero), and a product's sums start from +0 and so are never −0. (Zero-filling the gradients of
 * a LoRA step at SmolLM2's shape wrote 0.8 GB a step on one thread.)
 */
export function gradientToWrite(tensor: Tensor): { gradient: Float32Array; beta: 0 | 1 } {
  if (tensor.grad) return { gradient: tensor.grad, beta: 1 };
  tensor.grad = allocate(tensor.size);
  return { gradient: tensor.grad, beta: 0 };
}

/**
 * Wraps an op's output: records the backward rule when gradients are enabled and any input
 * requires one. Ops call this exactly once per output.
 */
export function createResult(
  data: Float32Array,
  shape: readonly number[],
  operation: string,
  inputs: readonly Tensor[],
  backward: (gradOutput: Float32Array) => void,
  releaseSaved?: () => void,
): Tensor {
  const needsGradient = gradientEnabled && inputs.some((input) => input.requiresGrad);
  const result = new Tensor(data, shape, needsGradient);
  if (needsGradient) {
    result.gradientNode = { operation, inputs, backward, release: releaseSaved };
  } else {
    releaseSaved?.();
  }
  return result;
}

// ---- creation ------------------------------------------------------------------------------

export function tensor(values: ArrayLike<number>, shape?: readonly number[]): Tensor {
  const data = allocate(values.length);
  for (let index = 0; index < values.length; index++) data[index] = values[index]!;
  return new Tensor(data, shape ?? [values.length]);
}

export function zeros(shape: readonly number[]): Tensor {
  return new Tensor(allocateZeroed(shapeSize(shape)), shape);
}

export function full(shape: readonly number[], value: number): Tensor {
  const data = allocate(shapeSize(shape));
  data.fill(value);
  return new Tensor(data, shape);
}

export function scalar(value: number): Tensor {
  return full([], value);
}

/** A trainable tensor: requires grad and survives `tidy`. */
export function parameter(data: Float32Array, shape: readonly number[]): Tensor {
  const result = new Tensor(data, shape, true);
  return result.keep();
}
