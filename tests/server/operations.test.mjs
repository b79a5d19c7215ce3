// End-to-end operations of `deepinfer serve`: Bearer auth, the queue limit (429 + Retry-After),
// a client that disconnects mid-stream (its request is cancelled and its pages freed), and
// SIGTERM (in-flight requests finish, the server exits 0).
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {MODEL_NAME, abortableFetch, collectGarbage, metric, postJson, requireSdk, sleep, startServer}
    from './harness.mjs';

const OpenAI = requireSdk('openai');
const anthropicSdk = requireSdk('@anthropic-ai/sdk');
const Anthropic = anthropicSdk.default ?? anthropicSdk.Anthropic ?? anthropicSdk;
const hello = [{role: 'user', content: 'Hello!'}];

test('an API key guards every route but /health', async () => {
  const server = await startServer(['--api-key', 'sekret']);
  try {
    assert.equal((await fetch(server.url + '/health')).status, 200);
    assert.equal((await fetch(server.url + '/metrics')).status, 401);
    const wrong = new OpenAI({baseURL: server.url + '/v1', apiKey: 'wrong', maxRetries: 0});
    await assert.rejects(wrong.models.list(), OpenAI.AuthenticationError);
    const right = new OpenAI({baseURL: server.url + '/v1', apiKey: 'sekret', maxRetries: 0});
    assert.equal((await right.models.list()).data[0].id, MODEL_NAME);
    const wrongA = new Anthropic({baseURL: server.url, apiKey: 'wrong', maxRetries: 0});
    await assert.rejects(wrongA.messages.create({model: MODEL_NAME, max_tokens: 2, messages: hello}),
                         anthropicSdk.AuthenticationError ?? Anthropic.AuthenticationError);
    const rightA = new Anthropic({baseURL: server.url, apiKey: 'sekret', maxRetries: 0});
    const m = await rightA.messages.create({model: MODEL_NAME, max_tokens: 2, messages: hello});
    assert.equal(m.type, 'message');
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('a full queue answers 429 with Retry-After; a disconnect cancels and frees pages', async () => {
  const server = await startServer(['--max-pending', '1']);
  try {
    const client = new OpenAI({baseURL: server.url + '/v1', apiKey: 'x', maxRetries: 0,
                               fetch: abortableFetch});
    const abort = new AbortController();
    const long = await client.chat.completions.create(
        {model: MODEL_NAME, messages: hello, max_tokens: 4000, stream: true, ignore_eos: true},
        {signal: abort.signal});
    const it = long[Symbol.asyncIterator]();
    await it.next();  // the long request is running
    const res = await postJson(server.url + '/v1/chat/completions',
                               {model: MODEL_NAME, messages: hello, max_tokens: 2});
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.equal(res.json.error.type, 'rate_limit_error');
    await assert.rejects(client.chat.completions.create({model: MODEL_NAME, messages: hello, max_tokens: 2}),
                         OpenAI.RateLimitError);
    assert.ok((await metric(server.url, 'deepinfer_kv_pages_used')) > 0);
    await collectGarbage();  // the abort must not depend on what a collection may free
    abort.abort();  // the client goes away mid-stream
    let pending = 1, used = 1;
    for (let i = 0; i < 200 && (pending > 0 || used > 0); i++) {
      await sleep(100);
      pending = await metric(server.url, 'deepinfer_requests_pending');
      used = await metric(server.url, 'deepinfer_kv_pages_used');
    }
    assert.equal(pending, 0, 'the cancelled request left the engine');
    assert.equal(used, 0, 'its pages were freed');
    const after = await client.chat.completions.create({model: MODEL_NAME, messages: hello, max_tokens: 2});
    assert.equal(after.choices.length, 1);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('a non-streaming client that disconnects cancels its request and frees its pages', async () => {
  const server = await startServer();
  try {
    const client = new OpenAI({baseURL: server.url + '/v1', apiKey: 'x', maxRetries: 0,
                               fetch: abortableFetch});
    const abort = new AbortController();
    const long = client.chat.completions.create(
        {model: MODEL_NAME, messages: hello, max_tokens: 6000, ignore_eos: true}, {signal: abort.signal});
    long.catch(() => {});
    let used = 0;
    for (let i = 0; i < 300 && !(used > 0); i++) {
      await sleep(50);
      used = await metric(server.url, 'deepinfer_kv_pages_used');
    }
    assert.ok(used > 0, 'the request is running');
    await collectGarbage();
    abort.abort();  // the client goes away while waiting for the whole answer
    await assert.rejects(long);
    let pending = 1, cancelled = 0;
    for (let i = 0; i < 100 && (pending > 0 || used > 0 || cancelled < 1); i++) {
      await sleep(100);
      pending = await metric(server.url, 'deepinfer_requests_pending');
      used = await metric(server.url, 'deepinfer_kv_pages_used');
      cancelled = await metric(server.url, 'deepinfer_requests_cancelled_total');
    }
    assert.equal(cancelled, 1, 'the disconnect cancelled the request');
    assert.equal(pending, 0, 'the cancelled request left the engine');
    assert.equal(used, 0, 'its pages were freed');
    assert.equal(await metric(server.url, 'deepinfer_generation_tokens_total') < 6000, true);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('SIGTERM lets in-flight requests finish, then exits 0', async () => {
  const server = await startServer();
  const client = new OpenAI({baseURL: server.url + '/v1', apiKey: 'x', maxRetries: 0});
  const inflight = client.chat.completions.create(
      {model: MODEL_NAME, messages: hello, max_tokens: 24, ignore_eos: true});
  await sleep(300);
  const exited = server.stop();
  const r = await inflight;
  assert.equal(r.usage.completion_tokens, 24);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal((await exited).code, 0);
  await assert.rejects(fetch(server.url + '/health'));
});
