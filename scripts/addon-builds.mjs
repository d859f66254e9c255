// The two builds of the native addon a before-and-after script times in one process: this
// checkout's (loaded as the library loads it) and another build's .node file (--against), both
// set to the same thread count. Exits with a message naming the script when either is missing.
import {
  loadAddonFile,
  loadNativeBackend,
  nativeBackend,
  nativeBackendProblem,
  setNativeThreads,
} from '../src/backend/native.ts';

/** { backend, other }: other is null when no --against file was given. */
export function loadBuilds(script, { against, threads }) {
  const backend = loadNativeBackend();
  if (!backend) {
    console.error(`${script}: no native backend (${nativeBackendProblem()})`);
    process.exit(1);
  }
  setNativeThreads(threads);
  if (!against) return { backend, other: null };
  const otherAddon = loadAddonFile(against);
  if (!otherAddon) {
    console.error(`${script}: --against ${against} is not a loadable addon build (.node)`);
    process.exit(1);
  }
  otherAddon.setThreads(threads);
  return { backend, other: nativeBackend(otherAddon) };
}
