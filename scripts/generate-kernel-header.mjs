// Writes native/src/kernel_signatures.h from the kernel signatures in src/backend/types.ts
// (`npm run generate:kernels`, which runs this through tsx so the TypeScript table is read
// as it is in the source tree).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeHeader, nativeHeaderPath } from '../src/backend/native-header.ts';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
writeFileSync(path.join(root, nativeHeaderPath), nativeHeader());
console.log(`wrote ${nativeHeaderPath}`);
