import { describe } from 'node:test';
import { runBackendSuite } from './backend.suite.js';
import { createTypeScriptBackend } from './typescript.js';

describe('typescript backend', () => {
  runBackendSuite(createTypeScriptBackend());
});
