/**
 * The files a new user writes in a fresh `npm init -y` project on the first day (the README's
 * task in code, a team config, and a client of the served team), for src/first-day.test.ts.
 *
 * The task has the README's shape (`defineTask` with name, problems, roles and a reward) with
 * problems the built-in arithmetic-chain models can play: each only knows its pretraining
 * prompts (`a+b|+c|-d`, role prompt `seg1`), so one agent evaluates the first segment.
 */
function taskSource(): string {
  return `import { defineTask } from 'teamtr';

// The first segment of a chain "a+b|+c|-1": 0–9 with + or −, never below 0.
const problems: Array<{ prompt: string; answer: string }> = [];
for (let a = 0; a < 10; a++)
  for (let b = 0; b < 10; b++)
    for (const sign of ['+', '-'])
      for (let c = 0; c < 10; c++) {
        const value = sign === '+' ? a + b : a - b;
        if (value >= 0) problems.push({ prompt: \`\${a}\${sign}\${b}|+\${c}|-1\`, answer: String(value) });
      }

export default defineTask({
  name: 'first-segment',
  problems: {
    train: problems.filter((_problem, index) => index % 5 !== 0),
    eval: problems.filter((_problem, index) => index % 5 === 0),
  },
  roles: [{ name: 'solver', prompt: 'seg1' }],
  maxTurnChars: 4,
  reward: async ({ problem, answer }) => (answer.trim() === problem.answer ? 1 : 0),
});
`;
}

/** task.ts: the README's shape with problems the built-in models can learn. */
export const taskFiles = { 'task.ts': taskSource() };

/**
 * The README's own task in code, word for word (the fenced block that starts `// task.ts`): it
 * is plain JavaScript as well as TypeScript, so a user can save it as task.ts or task.mjs.
 */
export function readmeTask(readme: string): string {
  const found = /```ts\n(\/\/ task\.ts\n[\s\S]*?)```/.exec(readme);
  if (!found)
    throw new Error(
      'README.md has no ```ts block starting "// task.ts": keep the task-in-code example there (src/first-day.test.ts runs it)',
    );
  return found[1]!;
}

/**
 * A team for the README's two roles (solver, finalizer) from the built-in models, whose 96
 * positions need turns shorter than the default.
 */
export const readmeTeamConfig = `agents:
  - { name: solver, model: "builtin:arithmetic-chain/role-0" }
  - { name: finalizer, model: "builtin:arithmetic-chain/role-1" }
protocol: { maxTurnTokens: 8 }
rollout: { problemsPerBatch: 1, groupSize: 4 }
budget: { maxStages: 1 }
evaluation: { problems: 1 }
`;

export const teamConfig = `agents:
  - { name: solver, model: "builtin:arithmetic-chain/role-0" }
rollout: { problemsPerBatch: 16, groupSize: 8 }
optimizer: { learningRate: 0.001 }
budget: { generatedTokens: 20000 }
evaluation: { problems: 300, every: 100 }
`;

/**
 * A client of the served team with the packages a user would reach for: \`openai\` (chat,
 * stream, n = 2, logprobs) and the \`ai\` package with @ai-sdk/openai-compatible and
 * @ai-sdk/openai (whose default \`openai('team')\` calls the Responses API). Prints one JSON
 * object of what it got.
 */
export const clientScript = `import OpenAI from 'openai';
import { generateText, streamText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenAI } from '@ai-sdk/openai';

const [baseURL, prompt, uncertain] = process.argv.slice(2);
const messages = [{ role: 'user', content: prompt }];
const client = new OpenAI({ baseURL, apiKey: 'none' });
const result = {};
const chat = await client.chat.completions.create({ model: 'team', messages, seed: 1 });
result.chat = { content: chat.choices[0].message.content, finish: chat.choices[0].finish_reason };
const stream = await client.chat.completions.create({ model: 'team', messages, stream: true, seed: 1 });
result.stream = [];
for await (const chunk of stream) {
  const text = chunk.choices[0]?.delta?.content;
  if (text) result.stream.push(text);
}
result.pairs = [];
for (let seed = 1; seed <= 8; seed++) {
  const two = await client.chat.completions.create({
    model: 'team',
    messages: [{ role: 'user', content: uncertain }],
    n: 2,
    seed,
  });
  result.pairs.push(two.choices.map((choice) => choice.message.content));
}
const scored = await client.chat.completions.create({ model: 'team', messages, logprobs: true, seed: 1 });
result.logprobs = scored.choices[0].logprobs.content.map(({ token, logprob }) => ({ token, logprob }));
const compatible = createOpenAICompatible({ name: 'teamtr', baseURL });
result.compatible = (await generateText({ model: compatible('team'), prompt, seed: 1 })).text;
const openai = createOpenAI({ baseURL, apiKey: 'none' });
result.responses = (await generateText({ model: openai('team'), prompt })).text;
result.responsesStream = [];
for await (const part of streamText({ model: openai('team'), prompt }).textStream)
  result.responsesStream.push(part);
console.log(JSON.stringify(result));
`;
