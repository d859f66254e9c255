import { generate } from '../nn/generate.js';
import { applyLora } from '../nn/lora.js';
import { RandomGenerator } from '../util/random.js';
import { timePrefillAndTotal, type WorkloadContext, type WorkloadFigure } from './context.js';
import { layerMatrixWeights, loraForwardFlopsPerToken, prefillFlops, throughput } from './flops.js';
import { smolLM2Lora, smolLM2Shape, withSmolLM2 } from './real-model.js';

/**
 * Sampling as the TeamTR stage samples (src/bench/team-stage.ts): 16 rows, 4 prompts × 4
 * trajectories, on SmolLM2's shape with the frozen base in bfloat16 and rank-8 LoRA adapters on
 * the query and value projections, 64 new tokens per call. Each group's 4 prompts share a
 * 68-token prefix (the stage's shared context; generation prefills it once) and end in 32
 * tokens of their own, 100 in all. Figures, each with its fraction of the bound:
 * - decode: new tokens per second of the 63 one-token steps after the prompt pass (the time of
 *   64 new tokens minus the time of 1, both calls timed in each repeat);
 * - generate: new tokens per second of the whole call, the prompt pass included.
 * About 25 s: building the random model is a third of it.
 */
const rows = { groups: 4, trajectories: 4 };
const sharedTokens = 68;
const ownTokens = 32;
const newTokens = 64;
const name = 'smollm2-135m-shape-bf16-lora';

export function smolLM2LoraDecode(context: WorkloadContext): WorkloadFigure[] {
  return withSmolLM2('smollm2-bf16-lora-decode', (model) => {
    applyLora(model, { ...smolLM2Lora, random: new RandomGenerator('smollm2-lora-decode') });
    model.storeFrozenWeightsAsBfloat16();
    const random = new RandomGenerator('smollm2-lora-decode-prompts');
    const ids = (count: number) =>
      Array.from({ length: count }, () => random.nextInt(smolLM2Shape.vocabSize));
    const prompts = Array.from({ length: rows.groups }, () => ids(sharedTokens)).flatMap((shared) =>
      Array.from({ length: rows.trajectories }, () => [...shared, ...ids(ownTokens)]),
    );
    const batch = prompts.length;
    const seconds = (maxNewTokens: number): number => {
      // One stream per row, as the stage draws: both calls sample the same first token.
      const streams = prompts.map((_prompt, row) => new RandomGenerator(`row-${row}`));
      const start = process.hrtime.bigint();
      generate(model, { prompts, maxNewTokens, random: streams, temperature: 1 });
      return Number(process.hrtime.bigint() - start) / 1e9;
    };
    const { prefill, total } = timePrefillAndTotal(seconds, newTokens, context);
    if (!(total > prefill))
      throw new Error(
        `bf16 LoRA decode: ${newTokens} new tokens took no longer than 1 (${total} s ≤ ${prefill} s); the machine was too busy to split prefill from decode, run again`,
      );
    const perToken = loraForwardFlopsPerToken(smolLM2Shape, smolLM2Lora);
    // The work the prompt pass does: each shared prefix once, each row's own tokens and head.
    const promptFlops =
      rows.groups * 2 * sharedTokens * layerMatrixWeights(smolLM2Shape) +
      batch * prefillFlops(smolLM2Shape, ownTokens);
    const decodeFlops = batch * (newTokens - 1) * perToken;
    return [
      throughput(`${name}-decode-batch${batch}`, {
        units: batch * (newTokens - 1),
        seconds: total - prefill,
        flops: decodeFlops,
        unit: 'tokens/s',
      }),
      throughput(`${name}-generate-batch${batch}`, {
        units: batch * newTokens,
        seconds: total,
        flops: promptFlops + decodeFlops,
        unit: 'tokens/s',
      }),
    ];
  });
}
