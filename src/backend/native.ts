/**
 * The native backend: each kernel's named arguments passed positionally, in the order of
 * `kernelSignatures`, to the C addon (native/, built by `node-gyp` into
 * build/Release/teamtr_native_<isa>.node at install; native-addon.ts picks the variant). Positional arguments keep the per-call cost to
 * a few typed-array lookups in C, which matters for token-by-token generation where kernels
 * are small and called often.
 */
import { existsSync } from 'node:fs';
import { signaturesFingerprint } from './native-header.js';
import {
  builtVariants,
  checkAmxSetting,
  chooseVariant,
  probeHost,
  requireAddon,
  variantPath,
  type HostInfo,
  type KernelPathCount,
  type NativeAddon,
  type NativeBuildInfo,
} from './native-addon.js';
import {
  kernelSignatures,
  type ArgumentSignature,
  type KernelBackend,
  type KernelName,
} from './types.js';

export type { HostInfo, KernelPathCount, NativeBuildInfo } from './native-addon.js';

/**
 * TEAMTR_NATIVE_ADDON: one addon file to load as it is (a build elsewhere, or a missing path
 * to test fallbacks); without it the variant is chosen for the host (native-addon.ts).
 */
const ADDON_OVERRIDE = process.env.TEAMTR_NATIVE_ADDON;

/** Where the addon is looked for, for messages. */
export const NATIVE_ADDON_PATH = ADDON_OVERRIDE ?? variantPath('<isa>');

let loadProblem: string | null = null;

/** Why the last `loadNativeBackend()` returned null (missing file, load error), or null. */
export function nativeBackendProblem(): string | null {
  return loadProblem;
}

/**
 * The addon file for this host: TEAMTR_NATIVE_ADDON, else the variant chooseVariant picks
 * (a ConfigError when TEAMTR_ISA names one the host cannot run). Null when nothing is built.
 */
function addonFile(): string | null {
  if (ADDON_OVERRIDE !== undefined) {
    if (existsSync(ADDON_OVERRIDE)) return ADDON_OVERRIDE;
    loadProblem = `the native addon is not built (${ADDON_OVERRIDE} does not exist)`;
    return null;
  }
  const built = builtVariants();
  if (built.length === 0) {
    loadProblem = `the native addon is not built (no ${variantPath('<isa>')})`;
    return null;
  }
  const variant = chooseVariant(probeHost(built), built, process.env.TEAMTR_ISA);
  checkAmxSetting(process.env.TEAMTR_AMX, variant);
  return variantPath(variant);
}

/** Loads `file` and checks it was built from the current kernel signatures. */
export function loadAddonFile(file: string): NativeAddon | null {
  let addon: NativeAddon;
  try {
    addon = requireAddon(file);
  } catch (error) {
    loadProblem = `the native addon failed to load: ${(error as Error).message}`;
    return null;
  }
  if (addon.info().signatures !== signaturesFingerprint()) {
    loadProblem =
      `the native addon at ${file} was built from other kernel signatures ` +
      '(an older build); rebuild it with `node scripts/build-native.mjs`';
    return null;
  }
  loadProblem = null;
  return addon;
}

let cached: KernelBackend | null | undefined;
let loadedAddon: NativeAddon | null = null;

/** The native backend, or null when the addon is not built or cannot be loaded. */
export function loadNativeBackend(): KernelBackend | null {
  if (cached !== undefined) return cached;
  const file = addonFile();
  loadedAddon = file ? loadAddonFile(file) : null;
  cached = loadedAddon ? nativeBackend(loadedAddon) : null;
  return cached;
}

function describe(info: NativeBuildInfo): string {
  const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  const sgemm =
    info.sgemm === 'openblas'
      ? `OpenBLAS ${info.blasVersion} (${info.blasCore}) sgemm`
      : `own sgemm${info.blas === 'openblas' ? `, OpenBLAS ${info.blasVersion} loaded` : ''}`;
  return `native (${info.isa} kernels, ${sgemm}; ${threads})`;
}

/** Build details of the loaded addon, or null when it is not available. */
export function nativeBuildInfo(): NativeBuildInfo | null {
  return loadNativeBackend() ? loadedAddon!.info() : null;
}

/** What the host is (cpuid, caches, CPUs), or null when the addon is not available. */
export function nativeHost(): HostInfo | null {
  return loadNativeBackend() && typeof loadedAddon!.host === 'function'
    ? loadedAddon!.host()
    : null;
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
 * Switches the code running large float32 products ("own" or "openblas"), so a benchmark can
 * time both in one process; throws when OpenBLAS is not installed. False without the addon.
 */
export function setNativeSgemm(path: 'own' | 'openblas'): boolean {
  if (!loadNativeBackend()) return false;
  loadedAddon!.setSgemm(path);
  return true;
}

/**
 * Where `buffer`'s bytes start, modulo a cache line (64), when the addon is loaded already (it
 * is not loaded for this); null otherwise. The buffer pool places its views on a line boundary.
 */
export function nativeAddressAlignment(buffer: ArrayBuffer): number | null {
  return loadedAddon ? loadedAddon.addressAlignment(buffer) : null;
}

/**
 * One pass over `data` on the kernel threads, returning the sum of what was read (in no fixed
 * order): the bench's probe of the memory read rate. Null without the addon.
 */
export function nativeReadMemory(data: Float32Array): number | null {
  return loadNativeBackend() ? loadedAddon!.readMemory(data) : null;
}

/**
 * The paths the hot kernels took since the last reset (a benchmark resets them before a
 * workload and reads them after it); null without the addon.
 */
export function nativeKernelPaths(options: { reset?: boolean } = {}): KernelPathCount[] | null {
  if (!loadNativeBackend()) return null;
  const paths = loadedAddon!.paths();
  if (options.reset) loadedAddon!.resetPaths();
  return paths;
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
    typeof argument === 'object' && 'default' in argument
      ? `(args.${name} ?? ${argument.default})`
      : `args.${name}`,
  );
  const compile = new Function('kernel', `return (args) => kernel(${passed.join(', ')});`);
  return compile(kernel) as (args: object) => unknown;
}

/** The kernels of an addon as a backend (also for tests that load one variant explicitly). */
export function nativeBackend(addon: NativeAddon): KernelBackend {
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
