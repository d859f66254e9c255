/** The package's files, for the commands: see util/package-root.ts. */
export { packagePath } from '../util/package-root.js';
