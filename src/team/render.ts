import type { Agent, Team } from './team.js';
import { turnTerminator } from './policy.js';
import type { AgentView } from './chat-view.js';

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

/**
 * Agent `agentIndex`'s input before its turn, both as the plain text character-level models
 * read and as the structured view a chat template renders (the policy picks).
 */
export function renderForAgent(
  team: Pick<Team, 'agents'>,
  agentIndex: number,
  prompt: string,
  turns: ReadonlyArray<{ agentIndex: number; text: string }>,
): { input: string; view: AgentView } {
  const agent = team.agents[agentIndex]!;
  const shared = turns.map((turn) => ({
    speakerTag: team.agents[turn.agentIndex]!.speakerTag,
    text: turn.text,
  }));
  return {
    input: renderAgentInput(agent, prompt, shared),
    view: {
      rolePrompt: agent.rolePrompt,
      prompt,
      turns: turns.map((turn) => ({
        speaker: team.agents[turn.agentIndex]!.name,
        text: turn.text,
        own: turn.agentIndex === agentIndex,
      })),
    },
  };
}
