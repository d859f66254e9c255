import type { HostInfo, KernelPathCount, NativeBuildInfo } from '../backend/native.js';

/**
 * What `teamtr bench` states about the machine and the kernels before any figure: the host's
 * kind (the kernels are chosen by it), its caches (the block sizes derive from them), the
 * instruction-set variant loaded and what runs large products; and after each workload, the
 * path each hot kernel took.
 */

function bytes(count: number): string {
  if (count <= 0) return 'unknown';
  if (count >= 2 ** 20 && count % 2 ** 20 === 0) return `${count / 2 ** 20} MiB`;
  return `${Math.round(count / 1024)} KiB`;
}

/** The host in lines: kind and model, CPUs and caches, the features the kernels look at. */
export function hostLines(host: HostInfo): string[] {
  return [
    `host: ${host.kind} (${host.model || host.vendor}), ${host.cpus} CPU${host.cpus === 1 ? '' : 's'}`,
    `caches: L1d ${bytes(host.l1dBytes)}, L2 ${bytes(host.l2Bytes)} per core, L3 ${bytes(host.l3Bytes)}`,
    `features: ${host.features.join(' ') || 'none of the ones the kernels use'}`,
  ];
}

/** The loaded build: variant, large products' code and why, OpenBLAS, derived block sizes. */
export function kernelLines(info: NativeBuildInfo): string[] {
  const blas =
    info.blas === 'openblas'
      ? `OpenBLAS ${info.blasVersion} loaded with core type ${info.blasCore || 'its own detection'}`
      : 'OpenBLAS not loaded';
  const { aBlockBytes, packedRows, packedColumns, rowTileBytes } = info.tuning;
  return [
    `kernels: ${info.isa} build (${info.vectorWidth * 32}-bit vectors), ${info.threads} threads; ` +
      `large float32 products: ${info.sgemm} (${info.sgemmReason}); ${blas}`,
    `block sizes from the caches: A block ${bytes(aBlockBytes)} (column panels), ` +
      `packed kernel ${packedRows} rows × ${packedColumns} columns of B, ` +
      `bfloat16 row tile ${bytes(rowTileBytes)}`,
  ];
}

/**
 * The paths taken, one line per kernel: each path's share of that kernel's multiply-adds
 * (of its calls when it counts none), largest first.
 */
export function pathLines(paths: readonly KernelPathCount[]): string[] {
  const byKernel = new Map<string, KernelPathCount[]>();
  for (const path of paths) byKernel.set(path.kernel, [...(byKernel.get(path.kernel) ?? []), path]);
  return [...byKernel].map(([kernel, taken]) => {
    const work = taken.reduce((total, path) => total + path.multiplyAdds, 0);
    const calls = taken.reduce((total, path) => total + path.calls, 0);
    const share = (path: KernelPathCount) =>
      work > 0 ? path.multiplyAdds / work : path.calls / calls;
    const parts = [...taken]
      .sort((left, right) => share(right) - share(left))
      .map((path) => `${path.path} ${(100 * share(path)).toFixed(0)}%`);
    return `  ${kernel}: ${parts.join(', ')} (${calls} calls)`;
  });
}
