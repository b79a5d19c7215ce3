// End-to-end: `deepinfer serve --generation-config` on the default (random-weight) model, through
// the real `openai` client. A model's generation_config.json gives the sampling fields a request
// leaves out (as vLLM's --generation-config auto); the request's own fields win; `off` keeps the
// engine's defaults; a bad file stops the server at start-up with the file named.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {after, before, test} from 'node:test';

import {MODEL_NAME, postJson, requireSdk, startServer} from './harness.mjs';

const OpenAI = requireSdk('openai');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-genconf-'));
const config = path.join(dir, 'generation_config.json');
let server, client;

before(async () => {
  // Hugging Face's other keys are ignored (do_sample included, as vLLM does).
  fs.writeFileSync(config, JSON.stringify(
      {bos_token_id: 0, do_sample: true, temperature: 0, max_new_tokens: 3}));
  server = await startServer(['--generation-config', config]);
  client = new OpenAI({baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0});
});
after(async () => {
  const {code} = await server.stop();
  assert.equal(code, 0);
  fs.rmSync(dir, {recursive: true, force: true});
});

const messages = [{role: 'user', content: 'Name three rivers.'}];

test('start-up says which defaults it serves with', () => {
  assert.match(server.stderr(), /sampling defaults from .*generation_config\.json: temperature 0, max_new_tokens 3/);
});

test('max_new_tokens is the default max_tokens of chat and completions', async () => {
  const chat = await client.chat.completions.create({model: MODEL_NAME, messages});
  assert.equal(chat.usage.completion_tokens, 3);
  assert.equal(chat.choices[0].finish_reason, 'length');
  const own = await client.chat.completions.create({model: MODEL_NAME, messages, max_tokens: 5});
  assert.equal(own.usage.completion_tokens, 5);
  // The completions API's own default (16) gives way to the model's.
  const completion = await client.completions.create({model: MODEL_NAME, prompt: 'The river'});
  assert.equal(completion.usage.completion_tokens, 3);
});

test('the default max_tokens is cut to the context the prompt leaves; an explicit one is not', async () => {
  const models = await (await fetch(server.url + '/v1/models')).json();
  const context = models.data[0].max_model_len;
  const prompt = Array.from({length: context - 2}, (_, i) => 1000 + (i % 5000));
  const fits = await postJson(server.url + '/v1/completions', {model: MODEL_NAME, prompt, ignore_eos: true});
  assert.equal(fits.status, 200, fits.text);
  assert.equal(fits.json.usage.completion_tokens, 2);
  const explicit = await postJson(server.url + '/v1/completions',
                                  {model: MODEL_NAME, prompt, max_tokens: 3});
  assert.equal(explicit.status, 400, explicit.text);
});

test('temperature 0 from the file makes a request without one greedy; its own wins', async () => {
  const greedy = [];
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({model: MODEL_NAME, messages, seed, max_tokens: 8});
    greedy.push(r.choices[0].message.content);
  }
  assert.equal(new Set(greedy).size, 1, 'the seed does not matter to a greedy request');
  const sampled = new Set();
  for (const seed of [1, 2, 3, 4]) {
    const r = await client.chat.completions.create(
        {model: MODEL_NAME, messages, seed, max_tokens: 8, temperature: 1});
    sampled.add(r.choices[0].message.content);
  }
  assert.ok(sampled.size > 1, 'temperature 1 in the request samples');
});

test('--generation-config off keeps the engine defaults', async () => {
  const plain = await startServer(['--generation-config', 'off']);
  try {
    assert.doesNotMatch(plain.stderr(), /sampling defaults/);
    const r = await postJson(plain.url + '/v1/completions',
                             {model: MODEL_NAME, prompt: 'The river', temperature: 0, ignore_eos: true});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.completion_tokens, 16);
  } finally {
    await plain.stop();
  }
});

test('a generation config with a bad value stops serve at start-up, naming the file', async () => {
  const bad = path.join(dir, 'bad.json');
  fs.writeFileSync(bad, JSON.stringify({temperature: 'hot'}));
  await assert.rejects(startServer(['--generation-config', bad]),
                       (e) => e.message.includes('server exited') && e.message.includes(bad) &&
                              e.message.includes('temperature'));
});
