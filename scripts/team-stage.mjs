// One TeamTR stage of three rank-8 LoRA agents on a random-weight SmolLM2-135M-shape model
// (src/bench/team-stage.ts): the stage's seconds, its sampling and update seconds and the
// process's peak RSS, as JSON lines. Run after `npm run build`:
//
//   node scripts/team-stage.mjs [--problems 4] [--group 4] [--turn-tokens 64]
//     [--checkpoint /tmp/smollm2-shape]   (reuse a checkpoint written by an earlier run)
//     [--weights-dtype float32|bfloat16]  (the agents' frozen base weights)
import { parseArgs } from 'node:util';
import { benchmarkTeamStage } from '../dist/bench/team-stage.js';

const { values } = parseArgs({
  options: {
    problems: { type: 'string', default: '4' },
    group: { type: 'string', default: '4' },
    'turn-tokens': { type: 'string', default: '64' },
    checkpoint: { type: 'string' },
    'weights-dtype': { type: 'string', default: 'float32' },
  },
});
if (!['float32', 'bfloat16'].includes(values['weights-dtype'])) {
  console.error(`--weights-dtype must be float32 or bfloat16, got "${values['weights-dtype']}"`);
  process.exit(2);
}
const results = await benchmarkTeamStage({
  problemsPerBatch: Number(values.problems),
  groupSize: Number(values.group),
  maxTurnTokens: Number(values['turn-tokens']),
  checkpointDirectory: values.checkpoint,
  weightsDtype: values['weights-dtype'],
});
for (const result of results) console.log(JSON.stringify(result));
