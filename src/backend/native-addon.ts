/**
 * Finding and loading the native addon. It is built in one variant per instruction set
 * (binding.gyp: `avx512`, `avx2` and `portable` on x86-64, one `native` build elsewhere), all
 * the same kernels compiled for different vector widths. Which runs is decided here, at run
 * time: the narrowest variant is loaded first and asked what the host is (cpuid, native/src/
 * host.c), then the widest variant the host can run is loaded, unless TEAMTR_ISA names
 * another. A variant the host cannot run is refused with an error naming what it lacks;
 * loading it would stop the process at its first instruction the CPU does not have.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../util/errors.js';
import type { KernelName } from './types.js';

/** x86-64 variants, narrowest first; other architectures build one `native` variant. */
export const X86_VARIANTS = ['portable', 'avx2', 'avx512'] as const;

/** What the CPU is, as the addon's cpuid reading reports it (native/src/host.c). */
export interface HostInfo {
  /** "intel", "amd", another cpuid vendor text, or the architecture off x86. */
  vendor: string;
  /** The CPU's brand string, e.g. "Intel(R) Xeon(R) Processor". */
  model: string;
  /** `<vendor>-<isa>`: "intel-avx512-bf16", "amd-avx512-bf16", "intel-avx512", "amd-avx2", … */
  kind: string;
  /** The widest variant the host can run: "avx512", "avx2" or "portable". */
  widestIsa: string;
  /** The instruction-set features present, by their /proc/cpuinfo names. */
  features: string[];
  /** One core's L1 data cache and L2, and the whole L3, in bytes (0 when unknown). */
  l1dBytes: number;
  l2Bytes: number;
  l3Bytes: number;
  /** CPUs this process may run on. */
  cpus: number;
}

/** The loaded build: its variant, the code its hot kernels run, the sizes derived from caches. */
export interface NativeBuildInfo {
  /** The instruction-set variant: "avx512", "avx2", "portable" or "native". */
  isa: string;
  /** "openblas" when OpenBLAS was found at run time, else "none". */
  blas: string;
  blasVersion: string;
  /** The OpenBLAS core type its kernels were chosen for (e.g. "SkylakeX"). */
  blasCore: string;
  /** Which code runs large float32 products: "own" or "openblas". */
  sgemm: string;
  /** Why: the host kind's default, or TEAMTR_SGEMM. */
  sgemmReason: string;
  /** Floats per SIMD vector (16 = AVX-512). */
  vectorWidth: number;
  threads: number;
  /** The fingerprint of the kernel signatures it was built from (see native-header.ts). */
  signatures: string;
  /** Block sizes derived from the host's caches (native/src/host.c). */
  tuning: {
    aBlockBytes: number;
    packedRows: number;
    packedColumns: number;
    rowTileBytes: number;
  };
}

/** Calls of one hot kernel on one of its paths since the counters were reset (paths.h). */
export interface KernelPathCount {
  /** The kernel (or "own sgemm", the GEMM kernels matmul and matmulGemmOrder share). */
  kernel: string;
  /** The code it ran, e.g. "lane panels (≥24 rows, ≥64 columns)". */
  path: string;
  calls: number;
  multiplyAdds: number;
}

/**
 * The addon's exports: `host`, `info`, `setThreads`, `setSgemm`, `paths`, `resetPaths`,
 * `readMemory` (one pass over the array on the pool, for the bench's memory read rate; returns
 * the sum of what it read), `addressAlignment` (where an ArrayBuffer's bytes start, modulo
 * 64), and every kernel of `kernelSignatures`, taking its arguments positionally in the signature's
 * order.
 */
export type NativeAddon = {
  host(): HostInfo;
  info(): NativeBuildInfo;
  setThreads(threads: number): void;
  setSgemm(path: 'own' | 'openblas'): void;
  paths(): KernelPathCount[];
  resetPaths(): void;
  readMemory(data: Float32Array): number;
  addressAlignment(buffer: ArrayBuffer): number;
} & Record<KernelName, (...args: unknown[]) => unknown>;

/** build/Release, two levels above this file in both src/ and dist/. */
export const NATIVE_BUILD_DIRECTORY = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'build',
  'Release',
);

/** The file of one variant. */
export function variantPath(isa: string): string {
  return path.join(NATIVE_BUILD_DIRECTORY, `teamtr_native_${isa}.node`);
}

/** The variants built here, narrowest first. */
export function builtVariants(): string[] {
  return [...X86_VARIANTS, 'native'].filter((isa) => existsSync(variantPath(isa)));
}

const require = createRequire(import.meta.url);

/** Loads an addon file (Node caches it: a second load returns the same module). */
export function requireAddon(file: string): NativeAddon {
  return require(file) as NativeAddon;
}

/** The variants `host` can run, narrowest first (`native` runs on the machine it was built on). */
export function variantsHostRuns(host: HostInfo): string[] {
  const widest = X86_VARIANTS.indexOf(host.widestIsa as (typeof X86_VARIANTS)[number]);
  return [...X86_VARIANTS.slice(0, widest + 1), 'native'];
}

/** What a variant needs, for the error when the host lacks it. */
const variantNeeds: Record<string, string> = {
  avx512: 'AVX-512 F, BW, DQ and VL',
  avx2: 'AVX2, FMA and F16C',
  portable: 'x86-64 with SSE4.2',
  native: 'the machine it was built on',
};

/**
 * The variant to load: TEAMTR_ISA when set (refused when the host cannot run it or it is not
 * built), else the widest built variant the host runs.
 */
export function chooseVariant(host: HostInfo, built: readonly string[], forced?: string): string {
  const runnable = variantsHostRuns(host).filter((isa) => built.includes(isa));
  if (forced !== undefined && forced !== '') {
    if (!built.includes(forced))
      throw new ConfigError(
        'TEAMTR_ISA',
        `"${forced}" is not a built variant of the native addon (built: ${built.join(', ')})`,
      );
    if (!runnable.includes(forced))
      throw new ConfigError(
        'TEAMTR_ISA',
        `"${forced}" needs ${variantNeeds[forced] ?? forced}, which this host (${host.kind}, ` +
          `${host.model}) lacks; variants it runs: ${runnable.join(', ')}`,
      );
    return forced;
  }
  const widest = runnable.at(-1);
  if (!widest)
    throw new ConfigError('TEAMTR_ISA', `no built variant runs on this host (${host.kind})`);
  return widest;
}

/**
 * Refuses a TEAMTR_AMX the kernels would not understand: `on` (the default), `off` or `lanes`,
 * and `lanes` only with the AVX-512 variant, which has the lanes that compute the tiles' order.
 */
export function checkAmxSetting(setting: string | undefined, variant: string): void {
  if (setting === undefined || setting === '' || setting === 'on' || setting === 'off') return;
  if (setting !== 'lanes')
    throw new ConfigError('TEAMTR_AMX', `"${setting}" is not one of on, off, lanes`);
  if (variant !== 'avx512')
    throw new ConfigError(
      'TEAMTR_AMX',
      `"lanes" needs the avx512 variant of the native addon; this process loads ${variant}`,
    );
}

/** What the host is, asked of the narrowest built variant (which any host of its kind runs). */
export function probeHost(built: readonly string[]): HostInfo {
  return requireAddon(variantPath(built[0]!)).host();
}
