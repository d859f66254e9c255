import { getBackend } from '../backend/index.js';
import { nativeBuildInfo, setNativeSgemm } from '../backend/native.js';
import { median } from './context.js';
import { benchmarkSgemm } from './timing.js';

/**
 * The machine's bound: the fastest sgemm of 4096×1024×1024 available here — ours, OpenBLAS's
 * run through our addon (single-threaded inside our thread pool's tasks), and PyTorch's where
 * it is installed — measured in the same run. Every throughput of `teamtr bench --real-model`
 * is stated as a fraction of it at its FLOPs (flops.ts), so that "0.85 of the bound" means
 * 0.85 of the best this machine does on a large product, not of our own kernel alone.
 */
export interface SgemmBound {
  /** GFLOP/s of each contender; null when it is not available here. */
  own: number;
  openblas: number | null;
  torch: number | null;
  /** The largest of the three, and whose it is. */
  bound: number;
  fastest: 'own' | 'openblas' | 'torch';
}

export const boundShape = { m: 4096, n: 1024, k: 1024 } as const;

/** The bound from the three rates (a missing one takes no part). */
export function boundOf(rates: {
  own: number;
  openblas: number | null;
  torch: number | null;
}): SgemmBound {
  const candidates = [
    ['own', rates.own],
    ['openblas', rates.openblas],
    ['torch', rates.torch],
  ] as const;
  let fastest: SgemmBound['fastest'] = 'own';
  let bound = rates.own;
  for (const [name, rate] of candidates)
    if (rate !== null && rate > bound) [fastest, bound] = [name, rate];
  return { ...rates, bound, fastest };
}

/**
 * Our sgemm and OpenBLAS's through the addon, `rounds` times each in turn (own, OpenBLAS, own,
 * …: a change of load on a shared machine hits both), medians; the addon's own choice is
 * restored afterwards. OpenBLAS is null when it is not installed or the backend is not native.
 */
export function measureOwnAndOpenblas(options: { rounds?: number; minimumSeconds?: number } = {}): {
  own: number;
  openblas: number | null;
} {
  const { rounds = 2, minimumSeconds = 0.5 } = options;
  const backend = getBackend();
  const info = backend.name === 'native' ? nativeBuildInfo() : null;
  const withBlas = info?.blas === 'openblas';
  const own: number[] = [];
  const openblas: number[] = [];
  const rate = () => benchmarkSgemm(backend, { ...boundShape, minimumSeconds });
  try {
    for (let round = 0; round < rounds; round++) {
      if (info) setNativeSgemm('own');
      own.push(rate());
      if (!withBlas) continue;
      setNativeSgemm('openblas');
      openblas.push(rate());
    }
  } finally {
    if (info) setNativeSgemm(info.sgemm as 'own' | 'openblas');
  }
  return { own: median(own), openblas: withBlas ? median(openblas) : null };
}
