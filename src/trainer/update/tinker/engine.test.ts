import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { saveCheckpoint } from '../../../io/checkpoint.js';
import { tinyTeam } from '../../../team/test-support/tiny-team.js';
import { LocalTinkerEngine } from '../../../serve/tinker/local-engine.js';
import { startTinkerService, type RunningTinkerService } from '../../../serve/tinker/server.js';
import { tinkerEngineSchema } from '../../config/tinker-engine.js';
import { engineContract } from '../test-support/engine-contract.js';
import { TinkerAgent } from './agent.js';

/**
 * The Tinker engine against `teamtr serve --tinker`'s service over HTTP on 127.0.0.1, serving
 * the contract's tiny model as its base: each unit is a rank-2 LoRA model there (seed 7, its
 * B factor zero, so it starts as the base).
 */
const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-tinker-engine-'));
const previousKey = process.env.TINKER_API_KEY;
let service: RunningTinkerService;
before(async () => {
  process.env.TINKER_API_KEY = 'tml-engine-contract';
  const model = tinyTeam({ agents: 1, seed: 5, initStd: 6 }).agents[0]!.policy;
  await saveCheckpoint(path.join(directory, 'base'), {
    config: model.model!.config,
    parameters: model.model!.stateDict(),
    tokenizer: model.tokenizer.toJSON(),
  });
  service = await startTinkerService({
    engine: new LocalTinkerEngine('tiny-base', path.join(directory, 'base')),
    port: 0,
    pollWaitMs: 200,
  });
});
after(async () => {
  await service.close();
  rmSync(directory, { recursive: true, force: true });
  if (previousKey === undefined) delete process.env.TINKER_API_KEY;
  else process.env.TINKER_API_KEY = previousKey;
});

engineContract('a unit on a Tinker service', {
  exact: false,
  connect: async (_team, learningRate) => {
    const settings = tinkerEngineSchema.parse({
      baseURL: service.url,
      baseModel: 'tiny-base',
      tokenizer: path.join(directory, 'base'),
      lora: { rank: 2, seed: 7 },
    });
    const agent = await TinkerAgent.connect({ name: 'solo', settings, runSeed: 0 });
    return {
      kind: 'tinker',
      name: 'solo',
      agent,
      agentIndices: [0],
      delta: 10,
      learningRate,
      adam: { beta1: 0.9, beta2: 0.99, weightDecay: 0 },
    };
  },
});
