import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runBounded } from '../util/test-support/bounded-child.js';
import { ChatTemplateLimitError, renderChatTemplate } from './chat.js';

const chatModule = JSON.stringify(new URL('./chat.ts', import.meta.url).href);
const messages = [{ role: 'user', content: 'hi' }];

/** Renders `template` in a bounded child; prints the error's class and message, or the text. */
async function renderBounded(template: string, env: Record<string, string> = {}) {
  const result = await runBounded({
    setup: `const { renderChatTemplate } = await import(${chatModule});`,
    body: `try { console.log(renderChatTemplate(${JSON.stringify(template)}, ${JSON.stringify(messages)}, {}).length); } catch (error) { console.log(error.name + ': ' + error.message); }`,
    env,
  });
  assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
  assert.ok(result.peakRssBytes < 2 ** 30, `peak RSS ${result.peakRssBytes}`);
  return result.stdout.trim();
}

describe('chat templates run under limits', () => {
  test('a loop over range(100000000) is refused before it builds the range', async () => {
    assert.match(
      await renderBounded('{% for i in range(100000000) %}x{% endfor %}'),
      /^ChatTemplateLimitError: the chat template asks for range\(\) of 100000000 items, more than the 100,000 steps \(TEAMTR_MAX_TEMPLATE_STEPS raises it\)/,
    );
  });

  test('nested loops that stay under the range limit stop at the step limit', async () => {
    assert.match(
      await renderBounded(
        '{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}',
      ),
      /^ChatTemplateLimitError: the chat template did not finish within 100,000 steps/,
    );
  });

  test('a string that doubles itself stops at the output limit', async () => {
    const doubling =
      "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}";
    assert.match(
      await renderBounded(doubling),
      /^ChatTemplateLimitError: the chat template built a string of \d+ characters, more than 16,777,216 characters \(TEAMTR_MAX_TEMPLATE_OUTPUT raises it\)/,
    );
  });

  test('the limits can be raised, and a real template is far inside them', async () => {
    assert.equal(
      await renderBounded('{{ range(150000) | length }}', { TEAMTR_MAX_TEMPLATE_STEPS: '200000' }),
      '6',
      'range(150000) renders "150000" once the limit is raised',
    );
    const chatml =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}{% endfor %}";
    assert.equal(renderChatTemplate(chatml, messages, {}), '<|im_start|>user\nhi<|im_end|>\n');
    // Rendering restores the interpreter: a later render is unaffected by an earlier failure.
    assert.throws(
      () => renderChatTemplate('{% for i in range(10000000) %}{% endfor %}', messages, {}),
      ChatTemplateLimitError,
    );
    assert.equal(renderChatTemplate('{{ range(3) | length }}', messages, {}), '3');
  });
});
