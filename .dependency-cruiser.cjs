// The layers of src/, enforced by `npm run lint` (dependency-cruiser). Each folder may import
// only the folders listed for it: kernels know nothing of tensors, tensors nothing of models,
// the RL math (rl/, with the statistics) and the tasks only util/, the figures (figures/: the
// figure model and its one SVG renderer) only util/, the team runtime models and tasks, the
// trainer orchestrates, and the applications (cli, serve, dashboard, report, bench) sit on top.
// The command line, the dashboard, the report and the server import the folders listed here — a
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
  figures: ['util'],
  tasks: ['util'],
  team: ['models', 'nn', 'tasks', 'tokenizer', 'tensor', 'util'],
  trainer: ['io', 'models', 'nn', 'optim', 'rl', 'tasks', 'team', 'tensor', 'tinker', 'tokenizer', 'util'],
  pretrain: ['io', 'models', 'nn', 'optim', 'tasks', 'team', 'tokenizer', 'util'],
  theory: ['figures', 'io', 'rl', 'util'],
  http: ['util'],
  serve: ['http', 'models', 'nn', 'optim', 'team', 'tensor', 'tinker', 'tokenizer', 'io', 'util'],
  tinker: ['models', 'nn', 'optim', 'rl', 'tensor', 'tokenizer', 'io', 'util'],
  report: ['figures', 'io', 'rl', 'trainer', 'util'],
  experiments: ['figures', 'rl', 'theory', 'trainer', 'util'],
  dashboard: ['figures', 'http', 'report', 'trainer', 'io', 'util'],
  bench: ['backend', 'nn', 'optim', 'rl', 'tensor', 'models', 'io', 'tokenizer', 'tasks', 'team', 'trainer', 'util'],
  cli: [
    'backend', 'bench', 'dashboard', 'experiments', 'figures', 'http', 'io', 'models', 'nn', 'optim', 'pretrain', 'report', 'rl',
    'serve', 'tasks', 'team', 'tensor', 'theory', 'tinker', 'tokenizer', 'trainer', 'util',
  ],
};

const testCode = '(\\.test\\.ts$|/test-support/|^src/backend/testing/|^src/backend/backend\\.suite\\.ts$)';

// The rooms of src/trainer/, top to bottom: each may import only the rooms after it, and none
// imports the files at the top of src/trainer/ (the stage, the schedules and the run loop,
// which may import every room). See src/trainer/README.md.
const trainerRooms = ['swap', 'step-control', 'run', 'setup', 'certificate', 'update', 'config'];
// Inside update/: the two engines know nothing of each other (engines.ts picks one per unit).
const updateEngines = ['local', 'tinker'];

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
    ...trainerRooms.map((room, index) => ({
      name: `trainer-${room}`,
      severity: 'error',
      comment: `src/trainer/${room}/ may import only ${trainerRooms.slice(index + 1).join(', ') || 'no other room'} of src/trainer/ (see .dependency-cruiser.cjs).`,
      from: { path: `^src/trainer/${room}/`, pathNot: testCode },
      to: {
        path: '^src/trainer/',
        pathNot: `^src/trainer/(${trainerRooms.slice(index).join('|')})/`,
      },
    })),
    ...updateEngines.map((engine) => ({
      name: `trainer-update-${engine}`,
      severity: 'error',
      comment: `src/trainer/update/${engine}/ does not import the other engine.`,
      from: { path: `^src/trainer/update/${engine}/`, pathNot: testCode },
      to: { path: `^src/trainer/update/(${updateEngines.filter((other) => other !== engine).join('|')})/` },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    // Resolve packages through their "exports" maps (e.g. @hono/node-server/utils/response).
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
    exclude: { path: '^(dist|build|node_modules)/' },
  },
};
