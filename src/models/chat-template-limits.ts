import { Environment, Interpreter, type Template } from '@huggingface/jinja';
import { TeamtrError } from '../util/errors.js';
import { describeLimit, limitOf } from '../util/limits.js';

/** A chat template that ran past one of its limits (steps, range(), string size). */
export class ChatTemplateLimitError extends TeamtrError {}

type Method = (this: Interpreter, ...rest: unknown[]) => unknown;
type Patchable = Record<'evaluate' | 'evaluateBlock', Method>;

/**
 * Renders under three limits: every expression, statement and block body the interpreter runs
 * is a step (TEAMTR_MAX_TEMPLATE_STEPS; a block counts so that an empty loop body is not free),
 * range() may not yield more items than a template may take steps, and no string it builds may
 * pass TEAMTR_MAX_TEMPLATE_OUTPUT characters.
 *
 * Template.render builds its own Interpreter, so the count goes on the prototype, for this
 * synchronous call only: nothing else runs until it returns, and `finally` puts the library's
 * methods back. The first step is the program in the global environment, where the library's
 * range() is replaced by the bounded one.
 */
export function renderWithinLimits(template: Template, items: Record<string, unknown>): string {
  const maxSteps = limitOf('templateSteps');
  const maxCharacters = limitOf('templateOutputCharacters');
  const range = new Environment().set('range', boundedRange(maxSteps));
  const prototype = Interpreter.prototype as unknown as Patchable;
  const original = { evaluate: prototype.evaluate, evaluateBlock: prototype.evaluateBlock };
  let steps = 0;
  const counted = (method: Method): Method =>
    function (this: Interpreter, ...rest) {
      if (steps === 0) (rest[1] as Environment).setVariable('range', range);
      if (++steps > maxSteps)
        throw new ChatTemplateLimitError(
          `the chat template did not finish within ${describeLimit('templateSteps')}; a template that runs this long cannot be used`,
        );
      const value = method.apply(this, rest) as { value?: unknown };
      if (typeof value?.value === 'string' && value.value.length > maxCharacters)
        throw new ChatTemplateLimitError(
          `the chat template built a string of ${value.value.length} characters, more than ${describeLimit('templateOutputCharacters')}`,
        );
      return value;
    };
  prototype.evaluate = counted(original.evaluate);
  prototype.evaluateBlock = counted(original.evaluateBlock);
  try {
    return template.render(items);
  } finally {
    Object.assign(prototype, original);
  }
}

/** Jinja's range(), refusing to build more items than a template may take steps. */
function boundedRange(maxItems: number) {
  return (start: number, stop?: number, step = 1): number[] => {
    const [from, to] = stop === undefined ? [0, start] : [start, stop];
    if (step === 0) throw new Error('range() step must not be zero');
    const count = Math.max(0, Math.ceil((to - from) / step));
    if (!Number.isFinite(count) || count > maxItems)
      throw new ChatTemplateLimitError(
        `the chat template asks for range() of ${count} items, more than the ${describeLimit('templateSteps')} a template may take`,
      );
    return Array.from({ length: count }, (_, index) => from + index * step);
  };
}
