import type { KnownHidden } from './reference-distributions.js';
import type { UnitTokens } from '../token-grid.js';

/**
 * An update starts from the policy that sampled its batch (TeamTR resamples after every
 * update), and the sampler kept the final hidden states that predicted each token
 * (TurnRecord.hiddenStates). On a model that sums in one order at every row count they are the
 * bits a forward pass over the turn gives, so π_old needs the LM head alone over them.
 *
 * They are taken only on evidence: every item the first step's forward pass covered (`known`,
 * half the batch with two minibatches) whose sampled states were kept must equal that pass bit
 * for bit. States from parameters that have changed since sampling (a batch reused after this
 * unit's own update), or from decoding that sums in another order, fail the check, and π_old
 * comes from the layers as before. Returns `known` extended with the sampled states of the
 * items it does not cover, or `known` itself when nothing was verified.
 */
export function withSampledHidden(
  tokens: UnitTokens,
  known: KnownHidden,
  hiddenSize: number,
): KnownHidden {
  const rowOf = new Int32Array(tokens.totalTokens).fill(-1);
  known.positions.forEach((position, row) => (rowOf[position] = row));
  const knownBits = new Uint32Array(
    known.hidden.buffer,
    known.hidden.byteOffset,
    known.hidden.length,
  );
  const extraPositions: number[] = [];
  const extraStates: Float32Array[] = [];
  let verified = 0;
  let start = 0;
  for (const [index, item] of tokens.items.entries()) {
    const length = item.completion.length;
    const sampled = tokens.sampledHidden[index];
    const itemStart = start;
    start += length;
    if (!sampled || length === 0 || sampled.length !== length * hiddenSize) continue;
    if (rowOf[itemStart]! < 0) {
      extraStates.push(sampled);
      for (let offset = 0; offset < length; offset++) extraPositions.push(itemStart + offset);
      continue;
    }
    const sampledBits = new Uint32Array(sampled.buffer, sampled.byteOffset, sampled.length);
    for (let offset = 0; offset < length; offset++) {
      const row = rowOf[itemStart + offset]!;
      if (row < 0) return known;
      for (let entry = 0; entry < hiddenSize; entry++)
        if (knownBits[row * hiddenSize + entry] !== sampledBits[offset * hiddenSize + entry])
          return known;
    }
    verified++;
  }
  if (verified === 0 || extraPositions.length === 0) return known;
  const hidden = new Float32Array(known.hidden.length + extraPositions.length * hiddenSize);
  hidden.set(known.hidden);
  let offset = known.hidden.length;
  for (const states of extraStates) {
    hidden.set(states, offset);
    offset += states.length;
  }
  const positions = new Int32Array(known.positions.length + extraPositions.length);
  positions.set(known.positions);
  positions.set(extraPositions, known.positions.length);
  return { positions, hidden };
}
