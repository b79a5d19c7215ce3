// End-to-end: the real `@anthropic-ai/sdk` client against `deepinfer serve` on the default
// (random-weight) model: messages, the streaming event order, thinking blocks, stop_sequences,
// a tool_use / tool_result round trip, forced tool_choice (tool / any), ping events, count_tokens,
// and errors as the SDK's exception types.
import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';

import {MODEL_NAME, postJson, requireSdk, schemaErrors, startServer} from './harness.mjs';

const sdk = requireSdk('@anthropic-ai/sdk');
const Anthropic = sdk.default ?? sdk.Anthropic ?? sdk;
let server, client;

before(async () => {
  server = await startServer();
  client = new Anthropic({baseURL: server.url, apiKey: 'unused', maxRetries: 0});
});
after(async () => {
  const {code} = await server.stop();
  assert.equal(code, 0);
});

const base = {model: MODEL_NAME, max_tokens: 10, temperature: 0,
              messages: [{role: 'user', content: 'Hello! Who are you?'}]};

function textOf(message) {
  return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

test('messages: shape and usage', async () => {
  const m = await client.messages.create(base);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, MODEL_NAME);
  assert.ok(['max_tokens', 'end_turn'].includes(m.stop_reason));
  assert.ok(m.usage.input_tokens > 0);
  assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 10);
  assert.ok(m.content.length >= 1);
  assert.equal(m.content[0].type, 'text');
});

test('streaming: the event order of the Messages API, same text as non-streamed', async () => {
  const whole = await client.messages.create(base);
  const stream = await client.messages.create({...base, stream: true});
  const types = [];
  let text = '', open = -1;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'content_block_start') {
      assert.equal(open, -1, 'one block open at a time');
      open = event.index;
    } else if (event.type === 'content_block_delta') {
      assert.equal(event.index, open);
      if (event.delta.type === 'text_delta') text += event.delta.text;
    } else if (event.type === 'content_block_stop') {
      assert.equal(event.index, open);
      open = -1;
    } else if (event.type === 'message_delta') {
      assert.equal(event.delta.stop_reason, whole.stop_reason);
      assert.equal(event.usage.output_tokens, whole.usage.output_tokens);
    }
  }
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.equal(types.at(-2), 'message_delta');
  assert.ok(types.includes('content_block_start'));
  assert.equal(open, -1);
  assert.equal(text, textOf(whole));
  // The SDK's stream helper assembles the same message.
  const final = await client.messages.stream(base).finalMessage();
  assert.equal(textOf(final), textOf(whole));
});

test('thinking blocks in thinking mode', async () => {
  const m = await client.messages.create(
      {...base, max_tokens: 8, thinking: {type: 'enabled', budget_tokens: 1024}});
  assert.equal(m.content[0].type, 'thinking');
  assert.ok(m.content[0].thinking.length > 0);
  const deltas = [];
  const stream = await client.messages.create(
      {...base, max_tokens: 8, thinking: {type: 'enabled', budget_tokens: 1024}, stream: true});
  for await (const event of stream) {
    if (event.type === 'content_block_delta') deltas.push(event.delta.type);
  }
  assert.ok(deltas.length > 0 && deltas.every((d) => d === 'thinking_delta'));
});

test('stop_sequences end the message with stop_reason stop_sequence', async () => {
  const full = textOf(await client.messages.create({...base, max_tokens: 16}));
  assert.ok(full.length >= 8, JSON.stringify(full));
  const stop = full.slice(4, 7);
  const m = await client.messages.create({...base, max_tokens: 16, stop_sequences: [stop]});
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, stop);
  assert.equal(textOf(m), full.slice(0, full.indexOf(stop)));
});

test('tool_use / tool_result round trip and count_tokens', async () => {
  const tools = [{name: 'get_weather', description: 'Weather of a city',
                  input_schema: {type: 'object', properties: {city: {type: 'string'}}}}];
  const messages = [
    {role: 'user', content: 'Weather in Paris?'},
    {role: 'assistant', content: [{type: 'text', text: 'Let me look.'},
                                  {type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {city: 'Paris'}}]},
    {role: 'user', content: [{type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny, 21C'}]},
  ];
  const m = await client.messages.create({...base, messages, tools});
  assert.equal(m.role, 'assistant');
  const withTools = await client.messages.countTokens({model: MODEL_NAME, messages, tools});
  const without = await client.messages.countTokens({model: MODEL_NAME, messages: messages.slice(0, 1)});
  assert.equal(withTools.input_tokens, m.usage.input_tokens);
  assert.ok(withTools.input_tokens > without.input_tokens);
});

test('tool_choice tool and any force a tool_use whose input validates', async () => {
  const schema = {type: 'object', properties: {
    city: {type: 'string', maxLength: 10}, days: {type: 'integer', minimum: 1, maximum: 3}},
    required: ['city', 'days']};
  const tools = [{name: 'get_weather', description: 'Weather of a city', input_schema: schema},
                 {name: 'noop', input_schema: {type: 'object', properties: {}}}];
  const ask = {...base, max_tokens: 200, messages: [{role: 'user', content: 'Weather in Paris?'}], tools};
  const m = await client.messages.create({...ask, tool_choice: {type: 'tool', name: 'get_weather'}});
  assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
  const uses = m.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.equal(uses[0].name, 'get_weather');
  assert.equal(schemaErrors(schema, uses[0].input), '');
  const any = await client.messages.create(
      {...ask, tool_choice: {type: 'any', disable_parallel_tool_use: true}});
  assert.equal(any.stop_reason, 'tool_use');
  assert.equal(any.content.filter((b) => b.type === 'tool_use').length, 1);
  await assert.rejects(client.messages.create({...ask, tool_choice: {type: 'tool', name: 'nope'}}),
                       sdk.BadRequestError ?? Anthropic.BadRequestError);
});

test('streams carry a ping event after message_start (raw SSE and the SDK)', async () => {
  const res = await fetch(server.url + '/v1/messages', {method: 'POST',
      headers: {'Content-Type': 'application/json'}, body: JSON.stringify({...base, stream: true})});
  const events = (await res.text()).split('\n').filter((l) => l.startsWith('event: ')).map((l) => l.slice(7));
  assert.equal(events[0], 'message_start');
  assert.equal(events[1], 'ping');
  assert.equal(events.at(-1), 'message_stop');
  const types = [];
  for await (const event of await client.messages.create({...base, stream: true})) types.push(event.type);
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
});

test('errors surface as the SDK exception types, in the Anthropic format', async () => {
  const {max_tokens, ...noMax} = base;
  await assert.rejects(client.messages.create(noMax), sdk.BadRequestError ?? Anthropic.BadRequestError);
  await assert.rejects(client.messages.create({...base, model: 'nope'}),
                       sdk.BadRequestError ?? Anthropic.BadRequestError);
  await assert.rejects(client.messages.create({...base, temperature: 2}),
                       sdk.BadRequestError ?? Anthropic.BadRequestError);
  const raw = await postJson(server.url + '/v1/messages', '{not json');
  assert.equal(raw.status, 400);
  assert.equal(raw.json.type, 'error');
  assert.equal(raw.json.error.type, 'invalid_request_error');
});
