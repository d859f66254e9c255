import type { ChatMessage } from '../models/chat.js';

/**
 * What one agent sees before its turn, as structure: the chat-template rendering needs who said
 * what (its own earlier turns are its assistant messages), not only the flattened text.
 */
export interface AgentView {
  rolePrompt: string;
  prompt: string;
  turns: Array<{ speaker: string; text: string; own: boolean }>;
}

/**
 * The shared context as chat messages for an instruct model: the role prompt as the system
 * message, the problem as the first user message, the agent's own earlier turns as assistant
 * messages, and every other agent's turn as a user message prefixed with its name. Turn texts
 * keep their lines.
 */
export function chatMessages(view: AgentView): ChatMessage[] {
  return [
    ...(view.rolePrompt ? [{ role: 'system', content: view.rolePrompt }] : []),
    { role: 'user', content: view.prompt },
    ...view.turns.map((turn) =>
      turn.own
        ? { role: 'assistant', content: turn.text }
        : { role: 'user', content: `${turn.speaker}: ${turn.text}` },
    ),
  ];
}
