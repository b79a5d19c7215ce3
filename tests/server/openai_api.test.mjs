// End-to-end: the real `openai` npm client against `deepinfer serve` on the default
// (random-weight) model: plain and streaming chat, logprobs, n, stop strings, thinking mode, a
// tool-call round trip, forced tool calls (tool_choice named / required, cut by max_tokens),
// completions, prompt_logprobs, tokenize,
// and errors as the SDK's exception types.
import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';

import {MODEL_NAME, metric, postJson, requireSdk, schemaErrors, startServer} from './harness.mjs';

const OpenAI = requireSdk('openai');
let server, client;

before(async () => {
  server = await startServer();
  client = new OpenAI({baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0});
});
after(async () => {
  const {code} = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM');
});

const hello = [{role: 'user', content: 'Hello! Who are you?'}];

test('models lists the served model', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [MODEL_NAME]);
});

test('plain chat: shape, usage and greedy determinism', async () => {
  const a = await client.chat.completions.create(
      {model: MODEL_NAME, messages: hello, max_tokens: 8, temperature: 0});
  assert.equal(a.object, 'chat.completion');
  assert.equal(a.choices.length, 1);
  assert.equal(a.choices[0].message.role, 'assistant');
  assert.equal(typeof a.choices[0].message.content, 'string');
  assert.ok(['length', 'stop'].includes(a.choices[0].finish_reason));
  assert.ok(a.usage.completion_tokens >= 1 && a.usage.completion_tokens <= 8);
  // The prompt the server counted is the one /tokenize renders for the same messages.
  const tok = await postJson(server.url + '/tokenize', {messages: hello});
  assert.equal(tok.status, 200);
  assert.equal(a.usage.prompt_tokens, tok.json.count);
  assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
  const b = await client.chat.completions.create(
      {model: MODEL_NAME, messages: hello, max_tokens: 8, temperature: 0});
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  // The second identical prompt is served from the prefix cache where whole pages match.
  assert.equal(typeof b.usage.prompt_tokens_details.cached_tokens, 'number');
});

test('streaming chat equals the non-streamed answer and ends with usage', async () => {
  const params = {model: MODEL_NAME, messages: hello, max_tokens: 12, temperature: 0};
  const whole = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create(
      {...params, stream: true, stream_options: {include_usage: true}});
  let text = '', role = null, finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks >= 3);
  assert.equal(role, 'assistant');
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage, whole.usage);
});

test('logprobs: one entry per token, top_logprobs sorted, greedy token is the top one', async () => {
  const r = await client.chat.completions.create({model: MODEL_NAME, messages: hello, max_tokens: 6,
                                                  temperature: 0, logprobs: true, top_logprobs: 3});
  const entries = r.choices[0].logprobs.content;
  assert.equal(entries.length, r.usage.completion_tokens);
  for (const e of entries) {
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(e.logprob <= 0);
    for (let i = 1; i < 3; i++) assert.ok(e.top_logprobs[i - 1].logprob >= e.top_logprobs[i].logprob);
    assert.equal(e.token, e.top_logprobs[0].token);
    assert.ok(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-6);
    if (!e.token.includes('\uFFFD')) assert.deepEqual(e.bytes, [...Buffer.from(e.token, 'utf8')]);
  }
  const probs = entries[0].top_logprobs.map((t) => Math.exp(t.logprob));
  assert.ok(probs.reduce((a, b) => a + b) <= 1 + 1e-6);
});

test('n samples with one seed are reproducible', async () => {
  const params = {model: MODEL_NAME, messages: hello, max_tokens: 6, temperature: 1, n: 2, seed: 7};
  const a = await client.chat.completions.create(params);
  const b = await client.chat.completions.create(params);
  assert.deepEqual(a.choices.map((c) => c.index), [0, 1]);
  assert.deepEqual(a.choices.map((c) => c.message.content), b.choices.map((c) => c.message.content));
  assert.notEqual(a.choices[0].message.content, a.choices[1].message.content);
  assert.equal(a.usage.completion_tokens, 12);
});

test('a stop string cuts the output where it first appears', async () => {
  const params = {model: MODEL_NAME, messages: hello, max_tokens: 16, temperature: 0};
  const full = (await client.chat.completions.create(params)).choices[0].message.content;
  assert.ok(full.length >= 8, 'the random model writes some text: ' + JSON.stringify(full));
  const stop = full.slice(4, 7);
  const cut = await client.chat.completions.create({...params, stop: [stop]});
  assert.equal(cut.choices[0].message.content, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, 'stop');
});

test('thinking mode puts the output in reasoning_content', async () => {
  // The random model never writes </think>, so everything it writes is reasoning.
  const r = await client.chat.completions.create(
      {model: MODEL_NAME, messages: hello, max_tokens: 8, temperature: 0, reasoning_effort: 'high'});
  const m = r.choices[0].message;
  assert.equal(typeof m.reasoning_content, 'string');
  assert.ok(m.reasoning_content.length > 0);
  assert.equal(m.content, '');
  const stream = await client.chat.completions.create({model: MODEL_NAME, messages: hello,
      max_tokens: 8, temperature: 0, stream: true, chat_template_kwargs: {thinking: true}});
  let reasoning = '';
  for await (const chunk of stream) {
    for (const c of chunk.choices) reasoning += c.delta.reasoning_content ?? '';
  }
  assert.equal(reasoning, m.reasoning_content);
});

test('tool-call round trip: tools in, assistant tool_calls and the tool result rendered', async () => {
  const tools = [{type: 'function', function: {name: 'get_weather', description: 'Weather of a city',
      parameters: {type: 'object', properties: {city: {type: 'string'}}, required: ['city']}}}];
  const first = await client.chat.completions.create({model: MODEL_NAME, max_tokens: 8,
      messages: [{role: 'user', content: 'Weather in Paris?'}], tools, tool_choice: 'auto'});
  assert.ok(['stop', 'length', 'tool_calls'].includes(first.choices[0].finish_reason));
  const messages = [
    {role: 'user', content: 'Weather in Paris?'},
    {role: 'assistant', content: null, tool_calls: [{id: 'call_1', type: 'function',
        function: {name: 'get_weather', arguments: JSON.stringify({city: 'Paris'})}}]},
    {role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21C'},
  ];
  const second = await client.chat.completions.create({model: MODEL_NAME, max_tokens: 8, messages, tools});
  assert.equal(second.choices[0].message.role, 'assistant');
  // The prompt the server built holds the DSML call and the tool result.
  const tok = await postJson(server.url + '/tokenize', {messages, tools});
  assert.equal(second.usage.prompt_tokens, tok.json.count);
  const text = (await postJson(server.url + '/detokenize', {tokens: tok.json.tokens})).json.prompt;
  assert.match(text, /<｜DSML｜ invoke name="get_weather">/);
  assert.match(text, /<tool_result>sunny, 21C<\/tool_result>/);
  assert.match(text, /"name": "get_weather"/);
});

test('completions: text and token prompts, legacy logprobs, streaming', async () => {
  const r = await client.completions.create(
      {model: MODEL_NAME, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, logprobs: 2});
  assert.equal(r.object, 'text_completion');
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.completion_tokens);
  assert.equal(lp.tokens.join(''), r.choices[0].text);
  for (const top of lp.top_logprobs) assert.equal(Object.keys(top).length <= 2, true);
  const ids = (await postJson(server.url + '/tokenize', {prompt: 'Once upon a time'})).json.tokens;
  const byIds = await client.completions.create(
      {model: MODEL_NAME, prompt: ids, max_tokens: 5, temperature: 0});
  assert.equal(byIds.choices[0].text, r.choices[0].text);
  const stream = await client.completions.create(
      {model: MODEL_NAME, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, stream: true});
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, r.choices[0].text);
});

test('prompt_logprobs (vLLM shape) on completions and chat, refused when streaming', async () => {
  const ids = (await postJson(server.url + '/tokenize', {prompt: 'Once upon a time there was'})).json.tokens;
  const r = await client.completions.create(
      {model: MODEL_NAME, prompt: ids, max_tokens: 1, temperature: 0, prompt_logprobs: 2});
  const plp = r.choices[0].prompt_logprobs;
  assert.equal(plp.length, ids.length);
  assert.equal(plp[0], null);
  for (let i = 1; i < ids.length; i++) {
    const pos = plp[i];
    const own = pos[String(ids[i])];
    assert.ok(own && Number.isFinite(own.logprob) && own.logprob <= 0, JSON.stringify(pos));
    const ranked = Object.values(pos).filter((e) => e.rank !== undefined).sort((a, b) => a.rank - b.rank);
    assert.deepEqual(ranked.map((e) => e.rank), [1, 2]);
    assert.ok(ranked[0].logprob >= ranked[1].logprob);
    for (const e of Object.values(pos)) assert.ok(e.logprob <= ranked[0].logprob);
    assert.ok(Object.keys(pos).length <= 3);
  }
  // The rank-1 token after a prefix is what greedy decoding of that prefix picks.
  for (const cut of [2, ids.length - 1]) {
    const next = await client.completions.create(
        {model: MODEL_NAME, prompt: ids.slice(0, cut), max_tokens: 1, temperature: 0, logprobs: 1});
    const best = Object.values(plp[cut]).find((e) => e.rank === 1);
    assert.equal(next.choices[0].logprobs.tokens[0], best.decoded_token, `after ${cut} tokens`);
  }
  const chat = await client.chat.completions.create(
      {model: MODEL_NAME, messages: hello, max_tokens: 2, temperature: 0, prompt_logprobs: 0});
  assert.equal(chat.prompt_logprobs.length, chat.usage.prompt_tokens);
  assert.equal(chat.prompt_logprobs[0], null);
  for (const pos of chat.prompt_logprobs.slice(1)) {
    assert.ok(Object.keys(pos).length >= 1 && Object.keys(pos).length <= 2);
  }
  await assert.rejects(client.chat.completions.create(
      {model: MODEL_NAME, messages: hello, max_tokens: 2, prompt_logprobs: 1, stream: true}),
      (e) => e instanceof OpenAI.BadRequestError && /prompt_logprobs/.test(e.message));
  await assert.rejects(client.completions.create(
      {model: MODEL_NAME, prompt: 'x', max_tokens: 2, prompt_logprobs: 21}), OpenAI.BadRequestError);
});

test('response_format json_schema: the output is JSON that validates', async () => {
  const schema = {type: 'object', properties: {answer: {type: 'string', enum: ['yes', 'no']},
                                               n: {type: 'integer', minimum: 0, maximum: 9}},
                  required: ['answer', 'n'], additionalProperties: false};
  const r = await client.chat.completions.create({model: MODEL_NAME, messages: hello, max_tokens: 64,
      temperature: 0, response_format: {type: 'json_schema', json_schema: {name: 'a', schema}}});
  assert.equal(r.choices[0].finish_reason, 'stop', JSON.stringify(r.choices[0]));
  const value = JSON.parse(r.choices[0].message.content);
  assert.deepEqual(Object.keys(value).sort(), ['answer', 'n']);
  assert.ok(['yes', 'no'].includes(value.answer));
  assert.ok(Number.isInteger(value.n) && value.n >= 0 && value.n <= 9);
  await assert.rejects(client.chat.completions.create({model: MODEL_NAME, messages: hello, max_tokens: 4,
      response_format: {type: 'json_schema', json_schema: {name: 'b', schema: {type: 'nonsense'}}}}),
      OpenAI.BadRequestError);
  // Properties come out in the schema's order, not sorted ("z" before "a").
  const ordered = {type: 'object', properties: {z: {type: 'integer', minimum: 0, maximum: 9},
                                                a: {type: 'integer', minimum: 0, maximum: 9}},
                   required: ['z', 'a'], additionalProperties: false};
  const o = await client.chat.completions.create({model: MODEL_NAME, messages: hello, max_tokens: 32,
      temperature: 0, response_format: {type: 'json_schema', json_schema: {name: 'c', schema: ordered}}});
  assert.equal(o.choices[0].finish_reason, 'stop', JSON.stringify(o.choices[0]));
  assert.deepEqual(Object.keys(JSON.parse(o.choices[0].message.content)), ['z', 'a']);
});

// The model is random; the DSML tool-call grammar forces the call and its arguments.
const weather = {type: 'object', properties: {
  city: {type: 'string', minLength: 1, maxLength: 12},
  unit: {type: 'string', enum: ['celsius', 'fahrenheit']},
  days: {type: 'integer', minimum: 1, maximum: 7},
  hourly: {type: 'boolean'}}, required: ['city', 'unit', 'days', 'hourly']};
const forcedTools = [
  {type: 'function', function: {name: 'get_weather', description: 'Weather of a city', parameters: weather}},
  {type: 'function', function: {name: 'get_time', description: 'The time', parameters: {
    type: 'object', properties: {zone: {type: 'string', enum: ['UTC', 'CET']}}, required: ['zone']}}},
];
const forcedSchemas = {get_weather: weather, get_time: forcedTools[1].function.parameters};

test('tool_choice named and required force tool calls whose arguments validate', async () => {
  const base = {model: MODEL_NAME, messages: [{role: 'user', content: 'Weather in Paris?'}],
                tools: forcedTools, max_tokens: 300, temperature: 0};
  const named = await client.chat.completions.create(
      {...base, tool_choice: {type: 'function', function: {name: 'get_weather'}}});
  const choice = named.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.equal(schemaErrors(weather, JSON.parse(call.function.arguments)), '');

  const required = await client.chat.completions.create(
      {...base, temperature: 1, seed: 3, tool_choice: 'required', parallel_tool_calls: false});
  assert.equal(required.choices[0].finish_reason, 'tool_calls');
  assert.equal(required.choices[0].message.tool_calls.length, 1);
  const any = required.choices[0].message.tool_calls[0];
  assert.ok(any.function.name in forcedSchemas);
  assert.equal(schemaErrors(forcedSchemas[any.function.name], JSON.parse(any.function.arguments)), '');

  // Streaming: the call arrives as a tool_calls delta with the same arguments (greedy).
  const stream = await client.chat.completions.create(
      {...base, tool_choice: {type: 'function', function: {name: 'get_weather'}}, stream: true});
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices[0]?.delta?.tool_calls ?? []) calls.push(c);
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.arguments, call.function.arguments);

  const bad = (extra) => client.chat.completions.create({...base, max_tokens: 4, ...extra});
  await assert.rejects(bad({tool_choice: {type: 'function', function: {name: 'nope'}}}), OpenAI.BadRequestError);
  await assert.rejects(bad({tools: undefined, tool_choice: 'required'}), OpenAI.BadRequestError);
  await assert.rejects(bad({tool_choice: 'required', response_format: {type: 'json_object'}}),
                       OpenAI.BadRequestError);
  await assert.rejects(bad({tool_choice: 'required', tools: [{type: 'function', function: {name: 'f',
      parameters: {type: 'object', properties: {a: {type: 'array', uniqueItems: true}}}}}]}),
      (e) => e instanceof OpenAI.BadRequestError && /uniqueItems/.test(e.message));
});

test('a forced tool call cut by max_tokens is a partial tool call, never DSML text', async () => {
  const base = {model: MODEL_NAME, messages: [{role: 'user', content: 'Weather in Paris?'}],
                tools: forcedTools, temperature: 0,
                tool_choice: {type: 'function', function: {name: 'get_weather'}}};
  const whole = await client.chat.completions.create({...base, max_tokens: 300});
  assert.equal(whole.choices[0].finish_reason, 'tool_calls');
  const full = whole.choices[0].message.tool_calls[0].function.arguments;
  const used = whole.usage.completion_tokens;
  let partial = 0;
  const half = Math.floor(used / 2);
  for (const [max_tokens, stream] of [[3, false], [9, true], [15, false], [half, true], [used - 2, false]]) {
    {
      let content = '', finish = null, calls = [];
      if (stream) {
        const s = await client.chat.completions.create({...base, max_tokens, stream: true});
        const byIndex = new Map();
        for await (const chunk of s) {
          const c = chunk.choices[0];
          if (!c) continue;
          content += c.delta?.content ?? '';
          for (const t of c.delta?.tool_calls ?? []) {
            const prev = byIndex.get(t.index) ?? {name: '', arguments: ''};
            prev.name += t.function?.name ?? '';
            prev.arguments += t.function?.arguments ?? '';
            byIndex.set(t.index, prev);
          }
          finish = c.finish_reason ?? finish;
        }
        calls = [...byIndex.values()];
      } else {
        const r = await client.chat.completions.create({...base, max_tokens});
        content = r.choices[0].message.content ?? '';
        finish = r.choices[0].finish_reason;
        calls = (r.choices[0].message.tool_calls ?? []).map((t) => t.function);
      }
      const what = `max_tokens ${max_tokens} stream ${stream}`;
      assert.equal(finish, 'length', what);
      assert.ok(!/DSML|｜|<\//.test(content), `${what}: markup in content ${JSON.stringify(content)}`);
      assert.ok(calls.length <= 1, what);
      if (calls.length) {
        assert.equal(calls[0].name, 'get_weather', what);
        assert.ok(full.startsWith(calls[0].arguments), `${what}: ${calls[0].arguments} vs ${full}`);
        partial++;
      }
    }
  }
  assert.ok(partial >= 2, 'no cut left a partial call to check');
});

test('errors surface as the SDK exception types', async () => {
  const base = {model: MODEL_NAME, messages: hello, max_tokens: 4};
  await assert.rejects(client.chat.completions.create({...base, model: 'nope'}),
                       (e) => e instanceof OpenAI.BadRequestError && e.code === 'model_not_found');
  await assert.rejects(client.chat.completions.create({...base, temperature: -1}), OpenAI.BadRequestError);
  await assert.rejects(client.chat.completions.create({...base, max_tokens: 1e6}), OpenAI.BadRequestError);
  await assert.rejects(
      client.chat.completions.create({...base, messages: [{role: 'user', content: 'hello '.repeat(9000)}]}),
      (e) => e instanceof OpenAI.BadRequestError && /context/.test(e.message));
  await assert.rejects(client.chat.completions.create({...base, response_format: {type: 'xml'}}),
                       OpenAI.BadRequestError);
  await assert.rejects(client.chat.completions.create({...base, messages: []}), OpenAI.BadRequestError);
  const malformed = await postJson(server.url + '/v1/chat/completions', '{"messages": [');
  assert.equal(malformed.status, 400);
  assert.equal(malformed.json.error.type, 'invalid_request_error');
  const missing = await fetch(server.url + '/v1/nothing');
  assert.equal(missing.status, 404);
  const big = await postJson(server.url + '/v1/chat/completions', 'x'.repeat(9 << 20));
  assert.equal(big.status, 413);
  assert.equal(big.json.error.type, 'invalid_request_error');
  // The server is still fine.
  const ok = await client.chat.completions.create(base);
  assert.equal(ok.choices.length, 1);
});

test('metrics count requests and latencies', async () => {
  assert.ok((await metric(server.url, 'deepinfer_requests_total{route="/v1/chat/completions",status="200"}')) > 0);
  assert.ok((await metric(server.url, 'deepinfer_requests_total{route="/v1/chat/completions",status="400"}')) > 0);
  assert.ok((await metric(server.url, 'deepinfer_time_to_first_token_seconds_count')) > 0);
  assert.ok((await metric(server.url, 'deepinfer_e2e_request_latency_seconds_count')) > 0);
  assert.ok((await metric(server.url, 'deepinfer_kv_pages_capacity')) > 0);
  // Draft acceptance (EngineStats::spec): exposed, and no more accepted than verified/drafted.
  const drafted = await metric(server.url, 'deepinfer_spec_decode_draft_tokens_total');
  const verified = await metric(server.url, 'deepinfer_spec_decode_verified_tokens_total');
  const accepted = await metric(server.url, 'deepinfer_spec_decode_accepted_tokens_total');
  assert.ok(drafted >= 0 && verified >= 0 && accepted >= 0, `${drafted} ${verified} ${accepted}`);
  assert.ok(accepted <= verified && verified <= drafted);
  assert.equal(await metric(server.url, 'deepinfer_requests_cancelled_total'), 0);
  assert.equal(await metric(server.url, 'deepinfer_requests_running'), 0);
});
