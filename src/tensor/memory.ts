/**
 * Buffer reuse for training loops. Every tensor op allocates its output through `allocate`,
 * which hands back a previously released Float32Array of the same length when one is pooled.
 * `tidy(fn)` records the tensors created while `fn` runs and disposes all of them except those
 * it returns (and those marked `keep`) when it ends: their buffers go back to the pool, so a
 * steady-state training step allocates nothing new and the garbage collector stays idle.
 *
 * Why a pool and not just the GC: V8 allocates large typed arrays outside its heap and frees
 * them only on a full collection; a step that creates ~100 MB of activations would otherwise
 * thrash (measured in `teamtr bench`), and zero-filling fresh arrays costs bandwidth too.
 */

import { nativeAddressAlignment } from '../backend/native.js';
import { ConfigError } from '../util/errors.js';

/**
 * Pooled memory beyond the pool's bound (`poolBound`) is left to the garbage collector instead.
 * Counted in the bytes each pooled buffer's views have used (the pages it holds), not its size
 * class: a [512, 576] activation takes 1.2 MB of its 2 MiB class, and a LoRA step at SmolLM2's
 * shape needs 1.48 GiB of classes but 0.96 GiB of used bytes, so counting classes dropped a
 * third of its buffers after every step and faulted them in anew (0.1–0.2 s of system time a
 * step). The bound is at least this many bytes (1 GiB unless a test sets it).
 */
let poolFloorBytes = 1024 * 1024 * 1024;
/**
 * Whether the bound grows to the most bytes buffers from `allocate` have had in use at once
 * (used bytes, as the bound counts them) since the pool was last cleared. So it does by default:
 * a step whose working set passes the floor (a LoRA step at Qwen2.5-1.5B's shape makes 3.6 GiB
 * of buffers) then reuses its buffers instead of dropping all but the floor's worth and faulting
 * them in anew every step, and the pool never holds more than the workload has already had in
 * use at once, so a workload whose buffers stay within the floor (every SmolLM2-shape one) runs
 * as it did with a fixed bound.
 */
let growsToWorkingSet = true;
let mostOutstandingUsedBytes = 0;
/** Whether TEAMTR_POOL_BYTES was read (on the pool's first use). */
let environmentRead = false;

/** The most bytes the pool keeps (in bytes its buffers have used). */
function poolBound(): number {
  if (!environmentRead) readPoolEnvironment();
  return growsToWorkingSet ? Math.max(poolFloorBytes, mostOutstandingUsedBytes) : poolFloorBytes;
}

/**
 * TEAMTR_POOL_BYTES fixes the bound (no growth): a host short of memory can keep the pool
 * smaller, and a benchmark can time the fixed bound against the default.
 */
function readPoolEnvironment(): void {
  environmentRead = true;
  const text = process.env.TEAMTR_POOL_BYTES;
  if (text === undefined || text === '') return;
  const bytes = Number(text);
  if (!Number.isSafeInteger(bytes) || bytes < 0)
    throw new ConfigError(
      'TEAMTR_POOL_BYTES',
      `must be a whole number of bytes ≥ 0 (e.g. 1073741824 for 1 GiB), not "${text}"; unset it for the default (1 GiB, or the most in use at once when more)`,
    );
  poolFloorBytes = bytes;
  growsToWorkingSet = false;
}

/** Arrays shorter than this are cheap to allocate and not pooled. */
const smallestPooledLength = 256;

/**
 * Buffers are pooled by size class (powers of two), not by exact length: a training loop whose
 * sequence lengths vary from batch to batch then reuses the same memory instead of hoarding one
 * buffer per distinct length. A pooled array is a view of length `length` on its class's buffer.
 */
const pool = new Map<number, ArrayBuffer[]>();

/**
 * A pooled buffer is its size class plus a cache line, and its views start on a line boundary
 * (where the native addon says the bytes start; at offset 0 before it is loaded). V8 hands out
 * large ArrayBuffers 16 bytes past a line, and a product's output rows off the line cost two
 * threads writing neighbouring column panels of it 11% of their speed (512 × 576 × 576: 260
 * against 293 GFLOP/s, the same product with its output moved onto the line, alternating in one
 * process); one thread loses about 2%.
 */
const LINE_BYTES = 64;
/** Where each pooled buffer's views start. */
const viewOffsets = new WeakMap<ArrayBuffer, number>();

function newPooledBuffer(bytes: number): ArrayBuffer {
  const buffer = new ArrayBuffer(bytes + LINE_BYTES);
  const alignment = nativeAddressAlignment(buffer) ?? 0;
  viewOffsets.set(buffer, (LINE_BYTES - alignment) % LINE_BYTES);
  return buffer;
}
/** Bytes of each pooled-size buffer its views have used so far (the pages it holds). */
const usedBytes = new WeakMap<ArrayBuffer, number>();
/** Used bytes (usedBytes) of the pooled buffers. */
let pooledBytes = 0;
/** Bytes handed out by `allocate` (pooled sizes only) and not yet given back to `release`. */
let outstandingBytes = 0;
/** The same buffers' used bytes (usedBytes): with pooledBytes, the pages the pool's buffers hold. */
let outstandingUsedBytes = 0;
let peakOutstandingBytes = 0;
/** Bytes of new (zero-filled by the OS, paid in page faults) and of zero-filled pooled buffers. */
let freshBytes = 0;
let zeroFilledBytes = 0;
/** Seconds spent in allocateZeroed's fill, when timed (`timeZeroFilling`). */
let zeroFillSeconds = 0;
let timingZeroFill = false;

/** Starts (or stops) timing allocateZeroed's fills, for a benchmark's time split. */
export function timeZeroFilling(enabled: boolean): void {
  timingZeroFill = enabled;
}

export interface Disposable {
  dispose(): void;
}

function sizeClassBytes(length: number): number {
  return 4 * 2 ** Math.ceil(Math.log2(length));
}

/** An uninitialized (possibly dirty) buffer of `length` floats. */
export function allocate(length: number): Float32Array {
  return allocateFrom(length).buffer;
}

/** `allocate`, saying whether the buffer is new (then it is all zeros). */
function allocateFrom(length: number): { buffer: Float32Array; fresh: boolean } {
  if (length < smallestPooledLength) return { buffer: new Float32Array(length), fresh: true };
  const bytes = sizeClassBytes(length);
  outstandingBytes += bytes;
  if (outstandingBytes > peakOutstandingBytes) peakOutstandingBytes = outstandingBytes;
  const reused = pool.get(bytes)?.pop();
  if (reused) {
    const used = usedBytes.get(reused)!;
    pooledBytes -= used;
    if (4 * length > used) usedBytes.set(reused, 4 * length);
    outstandingUsedBytes += Math.max(used, 4 * length);
    noteOutstandingUsed();
    return { buffer: new Float32Array(reused, viewOffsets.get(reused)!, length), fresh: false };
  }
  freshBytes += bytes;
  dropPooled(bytes);
  const buffer = newPooledBuffer(bytes);
  usedBytes.set(buffer, 4 * length);
  outstandingUsedBytes += 4 * length;
  noteOutstandingUsed();
  return { buffer: new Float32Array(buffer, viewOffsets.get(buffer)!, length), fresh: true };
}

function noteOutstandingUsed(): void {
  if (outstandingUsedBytes > mostOutstandingUsedBytes)
    mostOutstandingUsedBytes = outstandingUsedBytes;
}

/** A zero-filled buffer of `length` floats (a new one is zeros already: only reused ones are filled). */
export function allocateZeroed(length: number): Float32Array {
  const { buffer, fresh } = allocateFrom(length);
  if (fresh) return buffer;
  zeroFilledBytes += 4 * length;
  if (!timingZeroFill) {
    buffer.fill(0);
    return buffer;
  }
  const started = performance.now();
  buffer.fill(0);
  zeroFillSeconds += (performance.now() - started) / 1000;
  return buffer;
}

/**
 * Before a new buffer of `bytes` is made, leaves pooled buffers (of other size
 * classes: this one has none) to the garbage collector until the buffers in use, the pooled ones
 * and the new one together take at most the pool's bound — or, when those in use alone take
 * more than half of it, until the pool holds at most half its bound less `bytes`. A loop that
 * reuses its buffers (training steps of one shape) makes no new ones and keeps its whole working
 * set pooled, up to the bound; a workload that moves on to other shapes (sampling's activations,
 * then an update's) trims what it no longer uses instead of keeping a full pool of it beside the
 * new buffers. (Trimming to half the bound whatever was in use made a SmolLM2-shape stage, whose
 * tensors in use never pass 0.7 GB, drop and make anew 7.1 GiB of buffers: 1.5 M page faults.)
 */
function dropPooled(bytes: number): void {
  const bound = poolBound();
  const target = Math.max(bound / 2, bound - outstandingUsedBytes) - bytes;
  for (const bucket of pool.values()) {
    if (pooledBytes <= target) return;
    while (bucket.length > 0 && pooledBytes > target) pooledBytes -= usedBytes.get(bucket.pop()!)!;
  }
}

/** Whether `buffer` is a whole size-class buffer as `allocate` hands out (the ones pooled). */
function isPooledSize(buffer: Float32Array): boolean {
  return (
    buffer.length >= smallestPooledLength &&
    viewOffsets.get(buffer.buffer as ArrayBuffer) === buffer.byteOffset &&
    buffer.buffer.byteLength === sizeClassBytes(buffer.length) + LINE_BYTES
  );
}

/** Buffers `disown` took out of the count of those in use (a later `release` is welcome). */
const disowned = new WeakSet<ArrayBufferLike>();

/** Stops counting the buffer as in use; it may or may not come back through `release`. */
function stopCounting(buffer: Float32Array): number {
  const arrayBuffer = buffer.buffer;
  const classBytes = arrayBuffer.byteLength - LINE_BYTES;
  const used = usedBytes.get(arrayBuffer as ArrayBuffer) ?? classBytes;
  if (disowned.delete(arrayBuffer)) return used;
  outstandingBytes -= classBytes;
  // An array `allocate` did not hand out (one of a pooled size made elsewhere) was never counted.
  outstandingUsedBytes = Math.max(0, outstandingUsedBytes - used);
  return used;
}

/**
 * For a buffer whose owner may drop it to the garbage collector instead of releasing it (a
 * tensor's data handed out by `takeData`): the pool stops counting it as in use now, so that a
 * dropped one does not count forever. Releasing it later still pools it.
 */
export function disown(buffer: Float32Array): void {
  if (!isPooledSize(buffer) || disowned.has(buffer.buffer)) return;
  stopCounting(buffer);
  disowned.add(buffer.buffer);
}

/** Returns a buffer to the pool. The caller must not touch it afterwards. */
export function release(buffer: Float32Array): void {
  // Only whole size-class buffers from `allocate` are pooled; other arrays (views into larger
  // data, arrays made elsewhere) are simply dropped.
  if (!isPooledSize(buffer)) return;
  const bytes = buffer.buffer.byteLength - LINE_BYTES;
  const arrayBuffer = buffer.buffer as ArrayBuffer;
  const used = stopCounting(buffer);
  if (pooledBytes + used > poolBound()) return;
  let bucket = pool.get(bytes);
  if (!bucket) {
    bucket = [];
    pool.set(bytes, bucket);
  }
  bucket.push(arrayBuffer);
  usedBytes.set(arrayBuffer, used);
  pooledBytes += used;
}

/**
 * Sets the pool's bound to `bytes` (in bytes its buffers have used), growing to the working set
 * beyond it only with `growToWorkingSet`, and returns the bound in force before: for tests of the
 * pool. Buffers pooled beyond a lowered bound stay until reused or `clearPool`.
 */
export function setMaximumPooledBytes(
  bytes: number,
  options: { growToWorkingSet?: boolean } = {},
): number {
  if (!(bytes >= 0)) throw new RangeError(`the pool's bound must be ≥ 0 bytes, got ${bytes}`);
  const previous = poolBound();
  environmentRead = true;
  poolFloorBytes = bytes;
  growsToWorkingSet = options.growToWorkingSet ?? false;
  return previous;
}

/**
 * Drops every pooled buffer (e.g. between unrelated workloads of different shapes); the most
 * in use at once starts again from what is in use now.
 */
export function clearPool(): void {
  pool.clear();
  pooledBytes = 0;
  mostOutstandingUsedBytes = outstandingUsedBytes;
}

export function memoryStatistics(): {
  /** Bytes the pooled buffers have used (the pool's bound counts these). */
  pooledBytes: number;
  /** The most bytes the pool keeps now: its floor, or the most in use at once when more. */
  poolBoundBytes: number;
  pooledBuffers: number;
  scopes: number;
  /** Bytes of pooled-size buffers in use (allocated, not yet released). */
  outstandingBytes: number;
  /** The most `outstandingBytes` has been since the last `resetMemoryPeak()`. */
  peakOutstandingBytes: number;
  /** Pooled-size bytes allocated new (the OS zero-fills them on first touch: page faults). */
  freshBytes: number;
  /** Bytes allocateZeroed filled with zeros, and the seconds it took while timed. */
  zeroFilledBytes: number;
  zeroFillSeconds: number;
} {
  let pooledBuffers = 0;
  for (const bucket of pool.values()) pooledBuffers += bucket.length;
  return {
    pooledBytes,
    poolBoundBytes: poolBound(),
    pooledBuffers,
    scopes: scopeStack.length,
    outstandingBytes,
    peakOutstandingBytes,
    freshBytes,
    zeroFilledBytes,
    zeroFillSeconds,
  };
}

/** Starts a new high-water mark of `outstandingBytes` (tests and benchmarks of peak memory). */
export function resetMemoryPeak(): void {
  peakOutstandingBytes = outstandingBytes;
}

const scopeStack: Set<Disposable>[] = [];

/** Called by every tensor constructor: the innermost open scope takes ownership. */
export function track(item: Disposable): void {
  const scope = scopeStack[scopeStack.length - 1];
  if (scope) scope.add(item);
}

/** Removes an item from the innermost scope that owns it, so `tidy` will not dispose it. */
export function keep<T extends Disposable>(item: T): T {
  for (let index = scopeStack.length - 1; index >= 0; index--) {
    if (scopeStack[index]!.delete(item)) break;
  }
  return item;
}

/**
 * Runs `fn`, then disposes every tensor created inside it except the ones reachable from its
 * return value (a tensor, an array of tensors, or an object whose values are tensors), which
 * move to the enclosing scope. Scopes nest. Not for async functions.
 */
export function tidy<T>(fn: () => T): T {
  const scope = new Set<Disposable>();
  scopeStack.push(scope);
  let result: T;
  try {
    result = fn();
  } catch (error) {
    scopeStack.pop();
    for (const item of scope) item.dispose();
    throw error;
  }
  scopeStack.pop();
  const survivors = new Set<Disposable>();
  collectDisposables(result, survivors, 0);
  for (const item of scope) {
    if (survivors.has(item)) track(item);
    else item.dispose();
  }
  return result;
}

function collectDisposables(value: unknown, into: Set<Disposable>, depth: number): void {
  // Typed arrays hold numbers only; walking one would visit (and box) every element.
  if (value === null || typeof value !== 'object' || depth > 3 || ArrayBuffer.isView(value)) return;
  if (typeof (value as Disposable).dispose === 'function') {
    into.add(value as Disposable);
    return;
  }
  const items = Array.isArray(value) ? value : Object.values(value as object);
  for (const item of items) collectDisposables(item, into, depth + 1);
}
