// The layers of src/, enforced by `npm run lint` (dependency-cruiser). Each folder may import
// only the folders listed for it: kernels know nothing of tensors, tensors nothing of models,
// the RL math (rl/) and the tasks only util/, the team runtime models and tasks, the trainer
// orchestrates, and the applications (cli, serve, dashboard, report, bench) sit on top. The
// command line, the dashboard, the report and the server import the folders listed here — a
// stated list, not only the public API (src/index.ts), because they are part of the product and
// use internals the API does not promise to keep. No cycles, and no production code imports
// test code.
const allowed = {
  util: [],
  backend: ['util'],
  tensor: ['backend', 'util'],
  nn: ['tensor', 'backend', 'util'],
  optim: ['nn', 'tensor', 'backend', 'util'],
  io: ['nn', 'util'],
  tokenizer: ['io', 'util'],
  models: ['io', 'nn', 'optim', 'tokenizer', 'tensor', 'util'],
  rl: ['util'],
  tasks: ['util'],
  team: ['models', 'nn', 'tasks', 'tokenizer', 'tensor', 'util'],
  trainer: ['io', 'models', 'nn', 'optim', 'rl', 'tasks', 'team', 'tensor', 'tinker', 'tokenizer', 'util'],
  pretrain: ['io', 'models', 'nn', 'optim', 'tasks', 'team', 'tokenizer', 'util'],
  theory: ['io', 'rl', 'util'],
  serve: ['models', 'nn', 'team', 'tensor', 'tokenizer', 'io', 'util'],
  tinker: ['models', 'nn', 'optim', 'rl', 'tensor', 'tokenizer', 'io', 'util'],
  report: ['io', 'trainer', 'util'],
  experiments: ['theory', 'trainer', 'util'],
  dashboard: ['report', 'trainer', 'io', 'util'],
  bench: ['backend', 'nn', 'optim', 'rl', 'tensor', 'models', 'io', 'tokenizer', 'tasks', 'team', 'trainer', 'util'],
  cli: [
    'backend', 'bench', 'dashboard', 'experiments', 'io', 'models', 'nn', 'optim', 'pretrain', 'report', 'rl',
    'serve', 'tasks', 'team', 'tensor', 'theory', 'tinker', 'tokenizer', 'trainer', 'util',
  ],
};

const testCode = '(\\.test\\.ts$|/test-support/|^src/backend/testing/|^src/backend/backend\\.suite\\.ts$)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules may not depend on each other in a cycle.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'Every import resolves to a file (tsx is optional: --task-module loads it if installed).',
      from: {},
      to: { couldNotResolve: true, pathNot: '^tsx/esm/api$' },
    },
    {
      name: 'no-test-code-in-production',
      severity: 'error',
      comment: 'Production code never imports tests or test helpers (they stay out of dist/).',
      from: { path: '^src/', pathNot: testCode },
      to: { path: testCode },
    },
    ...Object.entries(allowed).map(([folder, folders]) => ({
      name: `layer-${folder}`,
      severity: 'error',
      comment: `src/${folder}/ may import only ${folders.length ? folders.join(', ') : 'nothing else in src'} (see .dependency-cruiser.cjs).`,
      from: { path: `^src/${folder}/`, pathNot: testCode },
      to: {
        path: '^src/',
        pathNot: [`^src/${folder}/`, ...folders.map((name) => `^src/${name}/`)],
      },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    exclude: { path: '^(dist|build|node_modules)/' },
  },
};
