import type { Transcript } from './transcripts.js';

/** Each line of `text` indented; an empty turn shows as (empty). */
function indented(text: string): string {
  if (text === '') return '    (empty)';
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

/**
 * One transcript for a reader: the problem, the expected answer, each agent's turn with its
 * token count and why it ended, and the reward.
 */
export function formatTranscript(transcript: Transcript): string {
  const { problem } = transcript;
  const heading = `stage ${transcript.stage} · problem ${problem.id} · episode ${transcript.sample} · reward ${transcript.reward}${transcript.correct ? ' (correct)' : ''}`;
  const turns = transcript.turns.map(
    (turn, index) =>
      `  turn ${index} ${turn.agent} — ${turn.tokens} token${turn.tokens === 1 ? '' : 's'}, ended by ${turn.ended}${turn.truncated ? ' (text cut here)' : ''}\n${indented(turn.text)}`,
  );
  return [
    heading,
    `  prompt\n${indented(problem.prompt)}`,
    `  expected answer\n${indented(problem.answer)}`,
    ...turns,
  ].join('\n');
}

/** Several transcripts as one preformatted block (TensorBoard's text plugin reads markdown). */
export function describeTranscripts(transcripts: readonly Transcript[]): string {
  const fence = '```';
  return `${fence}\n${transcripts.map(formatTranscript).join('\n\n').replaceAll(fence, "'''")}\n${fence}`;
}
