/**
 * Seeded random numbers and array helpers for the backend tests. Every test draws from its own
 * generator so a failure reproduces exactly; arrays are handed out as views at a non-zero
 * offset into a larger buffer so every kernel is exercised on `subarray` views.
 */
export interface RandomGenerator {
  /** Uniform in [0, 1). */
  next(): number;
  /** Standard normal. */
  normal(): number;
  /** Integer in [0, bound). */
  integer(bound: number): number;
}

/** mulberry32: small, fast, good enough for test data. */
export function createRandom(seed: number): RandomGenerator {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    normal: () => {
      const u = Math.max(next(), 1e-12);
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
    },
    integer: (bound) => Math.floor(next() * bound),
  };
}

const VIEW_OFFSET = 3;

/** A zero-filled Float32Array view that starts 3 elements into a larger buffer. */
export function allocate(length: number): Float32Array {
  return new Float32Array(length + VIEW_OFFSET + 2).subarray(VIEW_OFFSET, VIEW_OFFSET + length);
}

/** A view (see `allocate`) holding `values`. */
export function viewOf(values: ArrayLike<number>): Float32Array {
  const view = allocate(values.length);
  view.set(values);
  return view;
}

/** A view of `length` normal samples times `scale`. */
export function randomArray(random: RandomGenerator, length: number, scale = 1): Float32Array {
  const view = allocate(length);
  for (let i = 0; i < length; i++) view[i] = random.normal() * scale;
  return view;
}

/** An Int32Array view (non-zero byte offset) holding `values`. */
export function int32ViewOf(values: ArrayLike<number>): Int32Array {
  const view = new Int32Array(values.length + VIEW_OFFSET).subarray(VIEW_OFFSET);
  view.set(values);
  return view;
}

export function toFloat64(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values as ArrayLike<number>);
}
