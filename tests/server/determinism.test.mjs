// Same request, same output (issue 20), through the HTTP server in the default configuration
// (official index-key mode) with DSpark drafting forced (`--spec-policy fixed`) and a KV budget
// small enough to preempt: mixed requests (chat and completions, greedy and seeded, stop strings,
// streamed or not, n = 2) sent one at a time, then all at once, twice, give the same bytes; and
// the same requests against a server with speculation off give those bytes too. Prefix hits come
// from the earlier rounds (shared system prompts, repeated requests).
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {MODEL_NAME, metric, requireSdk, startServer} from './harness.mjs';

const OpenAI = requireSdk('openai');

// 8 running sequences of ~42 KB state plus 13 pages of 64 positions (65.6 KB each): the
// concurrent rounds need more pages than that and preempt; the longest request fits alone.
const TIGHT = ['--max-running', '8', '--kv-budget', '1200000'];
const SPEC_ON = ['--spec', 'dspark', '--spec-policy', 'fixed'];

const TOPICS = ['the sea', 'a mountain village', 'compilers', 'bread', 'the moon landing',
                'a lighthouse keeper', 'prime numbers', 'winter birds'];
const SYSTEMS = ['You are a careful assistant. Answer in plain English and keep it short. ' +
                     'Prefer concrete facts over general statements. '.repeat(6),
                 'You write short poems about whatever the user names. '.repeat(3)];

// n mixed requests, a pure function of i: kind, sampling, stop strings, streaming, lengths
// (prompts from ~20 to ~400 tokens, past 2 x index_topk of the ratio-2 layer).
function makeRequests(n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const topic = TOPICS[i % TOPICS.length];
    const long = i % 4 === 3 ? ` Here is more context about ${topic}: ` +
                                   `${topic} has a long history, and people wrote about it. `.repeat(12)
                             : '';
    const req = {
      kind: i % 3 === 2 ? 'completion' : 'chat',
      stream: i % 2 === 1,
      max_tokens: 12 + (i % 5) * 3,
      temperature: i % 4 === 0 ? 0 : 1,
    };
    if (req.temperature > 0) req.seed = 1000 + i;
    if (i % 6 === 1) req.stop = ['.', ' the'];
    if (i % 9 === 4 && !req.stream) req.n = 2;
    if (req.kind === 'chat') {
      req.messages = [{role: 'system', content: SYSTEMS[i % 2]},
                      {role: 'user', content: `Request ${i}: tell me about ${topic}.${long}`}];
    } else {
      req.prompt = `${SYSTEMS[i % 2]}Request ${i}. A note on ${topic}:${long}`;
    }
    out.push(req);
  }
  return out;
}

// One request; its choices as "index|finish_reason|text" lines.
async function send(client, req) {
  const {kind, ...body} = req;
  body.model = MODEL_NAME;
  const api = kind === 'chat' ? client.chat.completions : client.completions;
  const texts = new Map(), finish = new Map();
  const take = (c, text) => {
    texts.set(c.index, (texts.get(c.index) ?? '') + (text ?? ''));
    if (c.finish_reason) finish.set(c.index, c.finish_reason);
  };
  if (body.stream) {
    for await (const chunk of await api.create(body)) {
      for (const c of chunk.choices) take(c, kind === 'chat' ? c.delta.content : c.text);
    }
  } else {
    const r = await api.create(body);
    for (const c of r.choices) take(c, kind === 'chat' ? c.message.content : c.text);
  }
  return [...texts.keys()].sort().map((k) => `${k}|${finish.get(k)}|${texts.get(k)}`).join('\n');
}

async function alone(client, requests) {
  const out = [];
  for (const r of requests) out.push(await send(client, r));
  return out;
}

const together = (client, requests) => Promise.all(requests.map((r) => send(client, r)));

function expectSame(a, b, what) {
  let same = 0;
  const diffs = [];
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) same++;
    else if (diffs.length < 3) diffs.push(`request ${i}: ${JSON.stringify(a[i])} vs ${JSON.stringify(b[i])}`);
  }
  assert.equal(same, a.length, `${what}: ${same} of ${a.length} identical\n${diffs.join('\n')}`);
}

const REQUESTS = makeRequests(40);

test('alone == concurrent == concurrent again, DSpark on, preempting, default mode', async () => {
  const on = await startServer([...SPEC_ON, ...TIGHT]);
  let byteSpecOn;
  try {
    const client = new OpenAI({baseURL: on.url + '/v1', apiKey: 'x', maxRetries: 0, timeout: 600000});
    byteSpecOn = await alone(client, REQUESTS);
    const preempted0 = await metric(on.url, 'deepinfer_engine_preemptions_total');
    const first = await together(client, REQUESTS);
    const second = await together(client, [...REQUESTS].reverse());
    second.reverse();
    expectSame(byteSpecOn, first, 'alone vs concurrent');
    expectSame(byteSpecOn, second, 'alone vs concurrent (reversed order)');
    assert.ok(byteSpecOn.every((s) => s.split('|')[2] !== undefined));
    assert.ok(await metric(on.url, 'deepinfer_engine_preemptions_total') > preempted0,
              'the concurrent rounds preempted nothing: the budget is not tight');
    assert.ok(await metric(on.url, 'deepinfer_spec_decode_verified_tokens_total') > 0,
              'no drafted token was verified');
    assert.ok(await metric(on.url, 'deepinfer_prefix_cache_hits_total') > 0, 'no prefix hit');
  } finally {
    assert.equal((await on.stop()).code, 0);
  }
  // Speculation off, same budget: the same bytes, alone and concurrent.
  const off = await startServer(TIGHT);
  try {
    const client = new OpenAI({baseURL: off.url + '/v1', apiKey: 'x', maxRetries: 0, timeout: 600000});
    expectSame(byteSpecOn, await alone(client, REQUESTS), 'spec on vs spec off');
    expectSame(byteSpecOn, await together(client, REQUESTS), 'spec on vs spec off, concurrent');
  } finally {
    assert.equal((await off.stop()).code, 0);
  }
});
