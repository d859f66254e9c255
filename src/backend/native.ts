/**
 * The native backend: each kernel's named arguments passed positionally, in the order of
 * `kernelSignatures`, to the C addon (native/, built by `node-gyp` into
 * build/Release/teamtr_native.node at install). Positional arguments keep the per-call cost to
 * a few typed-array lookups in C, which matters for token-by-token generation where kernels
 * are small and called often.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signaturesFingerprint } from './native-header.js';
import {
  kernelSignatures,
  type ArgumentSignature,
  type KernelBackend,
  type KernelName,
} from './types.js';

/**
 * The addon's exports (see native/src/addon.c): `info`, `setThreads`, and every kernel of
 * `kernelSignatures`, taking its arguments positionally in the signature's order.
 */
type NativeAddon = {
  info(): NativeBuildInfo;
  setThreads(threads: number): void;
} & Record<KernelName, (...args: unknown[]) => unknown>;

/**
 * build/Release/teamtr_native.node, two levels above this file in both src/ and dist/;
 * TEAMTR_NATIVE_ADDON overrides it (a build elsewhere, or a missing path to test fallbacks).
 */
export const NATIVE_ADDON_PATH =
  process.env.TEAMTR_NATIVE_ADDON ??
  path.resolve(
    path.dirname(fileURLToPath(import.meta.url)),
    '..',
    '..',
    'build',
    'Release',
    'teamtr_native.node',
  );

let loadProblem: string | null = null;

/** Why the last `loadNativeBackend()` returned null (missing file, load error), or null. */
export function nativeBackendProblem(): string | null {
  return loadProblem;
}

function loadAddon(): NativeAddon | null {
  if (!existsSync(NATIVE_ADDON_PATH)) {
    loadProblem = `the native addon is not built (${NATIVE_ADDON_PATH} does not exist)`;
    return null;
  }
  try {
    const require = createRequire(import.meta.url);
    loadProblem = null;
    return require(NATIVE_ADDON_PATH) as NativeAddon;
  } catch (error) {
    loadProblem = `the native addon failed to load: ${(error as Error).message}`;
    return null;
  }
}

let cached: KernelBackend | null | undefined;
let loadedAddon: NativeAddon | null = null;

/** The native backend, or null when the addon is not built or cannot be loaded. */
export function loadNativeBackend(): KernelBackend | null {
  if (cached !== undefined) return cached;
  loadedAddon = loadAddon();
  if (loadedAddon && loadedAddon.info().signatures !== signaturesFingerprint()) {
    loadProblem =
      `the native addon at ${NATIVE_ADDON_PATH} was built from other kernel signatures ` +
      '(an older build); rebuild it with `node scripts/build-native.mjs`';
    loadedAddon = null;
  }
  cached = loadedAddon ? nativeBackend(loadedAddon) : null;
  return cached;
}

/** Which BLAS was linked, which code runs large products, and the SIMD width of the rest. */
export interface NativeBuildInfo {
  /** "openblas" or "none" (portable C kernels only). */
  blas: string;
  blasVersion: string;
  /** "openblas" or "own" (the addon's packed kernel, chosen where it is faster). */
  sgemm: string;
  /** Floats per SIMD vector the addon was compiled for (16 = AVX-512). */
  vectorWidth: number;
  threads: number;
  /** The fingerprint of the kernel signatures it was built from (see native-header.ts). */
  signatures: string;
}

function describe(info: NativeBuildInfo): string {
  const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  const simd = info.vectorWidth === 16 ? 'AVX-512' : `${info.vectorWidth * 32}-bit SIMD`;
  if (info.sgemm === 'openblas') return `native (OpenBLAS ${info.blasVersion}, ${threads})`;
  if (info.blas === 'openblas') {
    return `native (own ${simd} sgemm, OpenBLAS ${info.blasVersion} linked; ${threads})`;
  }
  return `native (portable C kernels, ${simd}, ${threads})`;
}

/** Build details of the loaded addon, or null when it is not available. */
export function nativeBuildInfo(): NativeBuildInfo | null {
  return loadNativeBackend() ? loadedAddon!.info() : null;
}

/**
 * Sets the native kernels' thread count (default: TEAMTR_NUM_THREADS, else every CPU this
 * process may use). For benchmarks; returns false when the addon is not available.
 */
export function setNativeThreads(threads: number): boolean {
  if (!loadNativeBackend()) return false;
  loadedAddon!.setThreads(threads);
  return true;
}

/**
 * A function that calls `kernel` with the named arguments of `signature` in order, defaults
 * filled in: `(args) => kernel(args.a, args.b, …, args.alpha ?? 1, …)`. It is compiled from the
 * signature (names are identifiers from our own table, never user input) because the generic
 * way, spreading an argument array built per call, costs about 100 ns more per call (measured
 * here: 300 vs 175–210 ns for an 8-float axpy, where the compiled caller matches a hand-written
 * one), and token-by-token generation makes many small kernel calls.
 */
function positionalCaller(
  kernel: (...args: unknown[]) => unknown,
  signature: Readonly<Record<string, ArgumentSignature>>,
): (args: object) => unknown {
  const passed = Object.entries(signature).map(([name, argument]) =>
    typeof argument === 'string' ? `args.${name}` : `(args.${name} ?? ${argument.default})`,
  );
  const compile = new Function('kernel', `return (args) => kernel(${passed.join(', ')});`);
  return compile(kernel) as (args: object) => unknown;
}

function nativeBackend(addon: NativeAddon): KernelBackend {
  const kernels = Object.fromEntries(
    (Object.keys(kernelSignatures) as KernelName[]).map((name) => [
      name,
      positionalCaller(addon[name], kernelSignatures[name]),
    ]),
  );
  return {
    name: 'native',
    get description() {
      return describe(addon.info());
    },
    ...kernels,
  } as KernelBackend;
}
