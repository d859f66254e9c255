// One TeamTR stage of three rank-8 LoRA agents on a random-weight model of SmolLM2-135M's or
// Qwen2.5-1.5B's shape (src/bench/team-stage.ts): the stage's seconds, its sampling and update
// seconds, its time split and the process's peak RSS, as JSON lines. Run after `npm run build`:
//
//   node scripts/team-stage.mjs [--problems 4] [--group 4] [--turn-tokens 64]
//     [--size 135m|1.5b]                  (the model's shape)
//     [--checkpoint /tmp/smollm2-shape]   (reuse a checkpoint written by an earlier run)
//     [--weights-dtype float32|bfloat16]  (the agents' frozen base weights)
import { parseArgs } from 'node:util';
import { qwen25OnePointFiveB, smolLM2 } from '../dist/bench/real-model.js';
import { benchmarkTeamStage } from '../dist/bench/team-stage.js';

const { values } = parseArgs({
  options: {
    problems: { type: 'string', default: '4' },
    group: { type: 'string', default: '4' },
    'turn-tokens': { type: 'string', default: '64' },
    checkpoint: { type: 'string' },
    'weights-dtype': { type: 'string', default: 'float32' },
    size: { type: 'string', default: '135m' },
  },
});
const shapes = { '135m': smolLM2, '1.5b': qwen25OnePointFiveB };
if (!Object.hasOwn(shapes, values.size)) {
  console.error(`--size must be 135m or 1.5b, got "${values.size}"`);
  process.exit(2);
}
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
  shape: shapes[values.size],
});
for (const result of results) console.log(JSON.stringify(result));
