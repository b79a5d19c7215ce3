// Bounded load: 64 concurrent streaming clients, 3 requests each (small max_tokens), against one
// `deepinfer serve`: zero errors, every stream complete (a finish_reason, usage, the [DONE] end
// the SDK consumes), and the server idle with every page released afterwards.
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {MODEL_NAME, metric, requireSdk, startServer} from './harness.mjs';

const OpenAI = requireSdk('openai');
const CLIENTS = 64, REQUESTS = 3, MAX_TOKENS = 6;

test(`${CLIENTS} concurrent streaming clients x ${REQUESTS} requests`, async () => {
  const server = await startServer(['--max-running', '64']);
  try {
    const t0 = Date.now();
    let complete = 0;
    const errors = [];
    const worker = async (w) => {
      const client = new OpenAI({baseURL: server.url + '/v1', apiKey: 'x', maxRetries: 0, timeout: 600000});
      for (let r = 0; r < REQUESTS; r++) {
        try {
          const stream = await client.chat.completions.create({
            model: MODEL_NAME, max_tokens: MAX_TOKENS, stream: true, stream_options: {include_usage: true},
            messages: [{role: 'user', content: `Client ${w} request ${r}: tell me something.`}],
          });
          let finish = null, usage = null, tokens = 0;
          for await (const chunk of stream) {
            if (chunk.usage) usage = chunk.usage;
            for (const c of chunk.choices) {
              if (c.finish_reason) finish = c.finish_reason;
              if (c.delta.content) tokens++;
            }
          }
          assert.ok(['length', 'stop'].includes(finish), `finish_reason ${finish}`);
          assert.ok(usage && usage.completion_tokens >= 1 && usage.completion_tokens <= MAX_TOKENS);
          complete++;
        } catch (e) {
          errors.push(`${w}/${r}: ${e.message}`);
        }
      }
    };
    await Promise.all(Array.from({length: CLIENTS}, (_, w) => worker(w)));
    const seconds = (Date.now() - t0) / 1000;
    console.log(`load: ${complete} streams in ${seconds.toFixed(1)} s`);
    assert.deepEqual(errors, []);
    assert.equal(complete, CLIENTS * REQUESTS);
    assert.equal(await metric(server.url, 'deepinfer_requests_pending'), 0);
    assert.equal(await metric(server.url, 'deepinfer_kv_pages_used'), 0);
    assert.equal(await metric(server.url,
        'deepinfer_requests_total{route="/v1/chat/completions",status="200"}'), CLIENTS * REQUESTS);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});
