// Bundles the dashboard's browser code (src/dashboard/client/*.ts) into
// dist/dashboard/client/dashboard.js, which dist/dashboard/assets.js serves. Run by `npm run build`
// after tsc (it uses the compiled bundler module, so no TypeScript loader is needed).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { writeDashboardClient } = await import(
  path.join(root, 'dist', 'dashboard', 'client-bundle.js')
);
await writeDashboardClient(path.join(root, 'dist', 'dashboard', 'client', 'dashboard.js'));
