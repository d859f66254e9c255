import path from 'node:path';
import { Template } from '@huggingface/jinja';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
import { encodeWithBos } from '../tokenizer/encode-with-bos.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { TeamtrError } from '../util/errors.js';
import { warnOnce } from '../util/warn.js';
import { renderWithinLimits } from './chat-template-limits.js';

export { ChatTemplateLimitError } from './chat-template-limits.js';

/**
 * Chat prompts: messages → token ids. A Hugging Face tokenizer with a chat template renders it
 * with @huggingface/jinja (a maintained Jinja implementation made for these templates).
 *
 * Message contents never become special tokens: the template is rendered with a placeholder
 * per content, the template's own text is encoded with special tokens (so "<|im_start|>"
 * becomes its id) and each content with the untrusted `encode`. A user cannot open a new
 * "<|im_start|>system" turn by typing it.
 *
 * Without a template (teamtr's own models, whose agents read plain text) the prompt is the
 * contents joined by newlines, after BOS: a single user message is exactly the raw input the
 * team runtime would give the model.
 */

export interface ChatMessage {
  role: string;
  content: string;
}

export interface ChatPromptOptions {
  /** End with the assistant header so the model writes the reply. @default true */
  addGenerationPrompt?: boolean;
  /** Ignore the chat template and use plain text. @default false */
  plain?: boolean;
}

// Letters make case filters (upper, title) visibly change the placeholder instead of passing it.
const placeholder = (index: number) => `\ue000message-content-${index}\ue001`;
const compiled = new Map<string, Template>();

function templateFor(source: string): Template {
  let template = compiled.get(source);
  if (!template) {
    try {
      template = new Template(source);
    } catch (error) {
      throw new TeamtrError(`the chat template does not parse: ${(error as Error).message}`);
    }
    compiled.set(source, template);
  }
  return template;
}

/**
 * Renders a Jinja chat template to text (the model's prompt string), under the limits of
 * chat-template-limits.ts: a template comes with a model directory, and one that loops over
 * range(100000000) must not run for minutes.
 */
export function renderChatTemplate(
  source: string,
  messages: readonly ChatMessage[],
  variables: Record<string, unknown>,
): string {
  const template = templateFor(source);
  try {
    // The library provides raise_exception and strftime_now.
    return renderWithinLimits(template, { messages, ...variables });
  } catch (error) {
    if (error instanceof TeamtrError) throw error;
    throw new TeamtrError(`the chat template failed to render: ${(error as Error).message}`);
  }
}

/**
 * A Hugging Face model without a chat template reads plain text, also where chat messages are
 * asked for: say so once, since a chat-tuned model prompted without its template answers
 * worse, and nothing else shows it.
 */
export function warnNoChatTemplate(source: string): void {
  warnOnce(
    `${source}:no-chat-template`,
    'TEAMTR_NO_CHAT_TEMPLATE',
    `${source} has no chat template (no chat_template in tokenizer_config.json, no chat_template.jinja): its prompts are plain text, not chat turns. For a chat model, add the template it was trained with; for a base model, ignore this`,
  );
}

/** Whether `chatPromptIds` will use a chat template for this tokenizer. */
export function hasChatTemplate(tokenizer: Tokenizer): tokenizer is HuggingFaceTokenizer {
  return tokenizer instanceof HuggingFaceTokenizer && tokenizer.chatTemplate !== null;
}

export function chatPromptIds(
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  options: ChatPromptOptions = {},
): number[] {
  if (messages.length === 0) throw new TeamtrError('a chat prompt needs at least one message');
  if (
    !options.plain &&
    tokenizer instanceof HuggingFaceTokenizer &&
    tokenizer.chatTemplate === null
  )
    warnNoChatTemplate(path.dirname(tokenizer.source));
  if (options.plain || !hasChatTemplate(tokenizer)) {
    return encodeWithBos(tokenizer, messages.map((message) => message.content).join('\n'));
  }
  const standIns = messages.map((message, index) => ({ ...message, content: placeholder(index) }));
  const rendered = renderChatTemplate(tokenizer.chatTemplate!, standIns, {
    add_generation_prompt: options.addGenerationPrompt ?? true,
    bos_token: tokenizer.bosToken ?? '',
    eos_token: tokenizer.eosToken ?? '',
  });
  const ids: number[] = [];
  let cursor = 0;
  messages.forEach((message, index) => {
    const marker = placeholder(index);
    const at = rendered.indexOf(marker, cursor);
    if (at < 0 || rendered.indexOf(marker, at + marker.length) >= 0) {
      throw new TeamtrError(
        `the chat template does not write message ${index}'s content exactly once and in order (it transforms contents), which teamtr does not support; use plain prompts instead`,
      );
    }
    // Loops, not push(...ids): a long message has more ids than a call takes arguments.
    for (const id of tokenizer.encodeWithSpecialTokens(rendered.slice(cursor, at))) ids.push(id);
    for (const id of tokenizer.encode(message.content)) ids.push(id);
    cursor = at + marker.length;
  });
  for (const id of tokenizer.encodeWithSpecialTokens(rendered.slice(cursor))) ids.push(id);
  return ids;
}
