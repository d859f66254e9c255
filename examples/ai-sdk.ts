// Call a served team from the Vercel AI SDK (after `teamtr serve runs/x`).
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';

const teamtr = createOpenAICompatible({
  name: 'teamtr',
  baseURL: process.env.TEAMTR_URL ?? 'http://127.0.0.1:8000/v1',
});

// The whole team answers one problem; its turns come back beside the answer.
const answer = await generateText({ model: teamtr('team'), prompt: '7+5|-3|+8', maxOutputTokens: 8 });
console.log(`team: ${answer.text} (${answer.usage.totalTokens} tokens)`);

// One agent, streamed.
const stream = streamText({ model: teamtr('segment-1'), prompt: '7+5|-3|+8', maxOutputTokens: 8 });
let streamed = '';
for await (const piece of stream.textStream) streamed += piece;
console.log(`segment-1: ${streamed}`);
