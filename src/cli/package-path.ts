import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A file shipped in the package (configs/demo.yaml, src/bench/pytorch/torch_reference.py), from this file's
 * place: src/cli/ and dist/cli/ are both two levels below the package root.
 */
export function packagePath(...segments: string[]): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', ...segments);
}
