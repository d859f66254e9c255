import { AdamW } from '../../../optim/adamw.js';
import { engineContract } from '../test-support/engine-contract.js';

engineContract('a local unit', {
  exact: true,
  connect: async (team, learningRate) => {
    const model = team.agents[0]!.policy.model!;
    const adam = { learningRate, beta1: 0.9, beta2: 0.99, epsilon: 1e-8, weightDecay: 0 };
    return {
      name: 'solo',
      model,
      optimizer: new AdamW(model.trainableParameters(), adam),
      agentIndices: [0],
      delta: 10,
      learningRate,
    };
  },
});
