/**
 * Backend selection. `getBackend()` is what the tensor layer calls; the choice comes from
 * `setBackend()` or else the TEAMTR_BACKEND environment variable (native | typescript | auto,
 * default auto: the native addon when it loads, the TypeScript reference otherwise).
 */
import { ConfigError, TeamtrError } from '../util/errors.js';
import { loadNativeBackend, nativeBackendProblem } from './native.js';
import { createTypeScriptBackend } from './typescript.js';
import type { KernelBackend } from './types.js';

export type { KernelBackend } from './types.js';

export const BACKEND_NAMES = ['auto', 'native', 'typescript'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

const BUILD_HINT =
  'Build it with `npm rebuild teamtr` (or `node scripts/build-native.mjs` in a checkout); it needs ' +
  'a C compiler and python3, and links OpenBLAS when libopenblas-dev is installed.';

let current: KernelBackend | null = null;
let typescriptBackend: KernelBackend | null = null;
let warned = false;

function typescript(): KernelBackend {
  typescriptBackend ??= createTypeScriptBackend();
  return typescriptBackend;
}

function parseName(name: string, source: string): BackendName {
  if ((BACKEND_NAMES as readonly string[]).includes(name)) return name as BackendName;
  throw new ConfigError(source, `unknown backend "${name}" (valid: ${BACKEND_NAMES.join(', ')})`);
}

function warnOnce(message: string): void {
  if (warned || process.env.TEAMTR_QUIET_BACKEND === '1') return;
  warned = true;
  process.stderr.write(`teamtr: ${message}\n`);
}

function resolve(name: BackendName): KernelBackend {
  if (name === 'typescript') return typescript();
  const native = loadNativeBackend();
  if (native) return native;
  const problem = nativeBackendProblem() ?? 'the native addon is unavailable';
  if (name === 'native') {
    throw new TeamtrError(`The native backend was requested but ${problem}. ${BUILD_HINT}`);
  }
  warnOnce(
    `${problem}; running the pure-TypeScript kernels, which are much slower. ${BUILD_HINT} ` +
      'Set TEAMTR_QUIET_BACKEND=1 to silence this warning.',
  );
  return typescript();
}

/** The active kernel backend (chosen on first use, then cached). */
export function getBackend(): KernelBackend {
  current ??= resolve(parseName(process.env.TEAMTR_BACKEND ?? 'auto', 'TEAMTR_BACKEND'));
  return current;
}

/**
 * Switches the backend: by name, or to a given implementation (tests use this to run the
 * tensor layer on each backend). Returns the backend now active.
 */
export function setBackend(choice: BackendName | KernelBackend): KernelBackend {
  current = typeof choice === 'string' ? resolve(parseName(choice, 'backend')) : choice;
  return current;
}

/** Names of the backends that can run here: always "typescript", plus "native" when built. */
export function availableBackends(): string[] {
  return loadNativeBackend() ? ['native', 'typescript'] : ['typescript'];
}
