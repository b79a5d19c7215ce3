// One streamed chat request through the real `openai` npm client (tests/dist/router_test.sh):
// prints the concatenated content deltas and the finish reason as JSON.
//   node router_openai_stream.mjs NPM_DIR BASE_URL API_KEY
import { createRequire } from 'node:module';
import path from 'node:path';

const [npmDir, baseUrl, apiKey] = process.argv.slice(2);
const OpenAI = createRequire(path.join(npmDir, 'node_modules', 'noop.js'))('openai');
const client = new OpenAI({baseURL: baseUrl + '/v1', apiKey: apiKey || 'none', maxRetries: 0});
const stream = await client.chat.completions.create({
  model: 'm', max_tokens: 24, temperature: 0.8, seed: 17, stream: true,
  stream_options: {include_usage: true},
  messages: [{role: 'user', content: 'Tell me about rivers and stones.'}],
});
let content = '';
let finish = null;
let chunks = 0;
let usage = null;
for await (const chunk of stream) {
  ++chunks;
  for (const c of chunk.choices) {
    content += c.delta?.content ?? '';
    if (c.finish_reason) finish = c.finish_reason;
  }
  if (chunk.usage) usage = chunk.usage.completion_tokens;
}
console.log(JSON.stringify({content, finish, completion_tokens: usage, several_chunks: chunks > 2}));
