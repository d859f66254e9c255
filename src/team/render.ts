import type { Agent } from './team.js';
import { turnTerminator } from './policy.js';

export interface SharedTurn {
  speakerTag: string;
  text: string;
}

/**
 * The shared context as text: the task prompt, then every earlier turn tagged with its
 * speaker, one line each. Each agent renders it into its own input by prefixing its role
 * prompt and ending with its own speaker tag, so its completion is its turn's content:
 *
 *     <rolePrompt><prompt>\n<tag₀><turn₀>\n<tag₁><turn₁>\n<own tag>
 */
export function renderSharedContext(prompt: string, turns: readonly SharedTurn[]): string {
  let text = `${prompt}${turnTerminator}`;
  for (const turn of turns) text += `${turn.speakerTag}${singleLine(turn.text)}${turnTerminator}`;
  return text;
}

export function renderAgentInput(
  agent: Pick<Agent, 'rolePrompt' | 'speakerTag'>,
  prompt: string,
  turns: readonly SharedTurn[],
): string {
  return `${agent.rolePrompt}${renderSharedContext(prompt, turns)}${agent.speakerTag}`;
}

/** A turn is one line: a newline inside (possible from remote models) becomes a space. */
export function singleLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

/** The default speaker tag of agent `index`: "A:", "B:", … */
export function speakerTagFor(index: number): string {
  return `${String.fromCharCode(65 + (index % 26))}:`;
}
