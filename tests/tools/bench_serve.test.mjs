// `deepinfer bench-serve` against a real `deepinfer serve` (the bundled default model on a
// random loopback port, tests/server/harness.mjs): every request succeeds, token counts are
// exact (ignore_eos), percentiles are ordered, the JSON has its fields, the arithmetic of
// throughput and cost agrees with the counts, a sweep's points send prompts of their own, a
// shared-prefix workload hits the server's prefix cache, and a sweep writes an SVG plot.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, metric, MODEL_NAME } from '../server/harness.mjs';

let server;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-serve-test-'));

before(async () => { server = await startServer(); });
after(async () => {
  if (server) assert.equal((await server.stop()).code, 0);
  fs.rmSync(tmp, {recursive: true, force: true});
});

function benchServe(args) {
  const r = spawnSync(process.env.DEEPINFER_BIN, ['bench-serve', '--base-url', server.url, ...args],
                      {encoding: 'utf8', timeout: 240000});
  assert.equal(r.status, 0, `bench-serve failed: ${r.stderr}\n${r.stdout}`);
  return r;
}

function checkDistribution(d, name) {
  for (const k of ['mean', 'p50', 'p90', 'p99', 'min', 'max', 'count']) {
    assert.equal(typeof d[k], 'number', `${name}.${k}`);
  }
  assert.ok(d.min <= d.p50 && d.p50 <= d.p90 && d.p90 <= d.p99 && d.p99 <= d.max,
            `${name} percentiles out of order: ${JSON.stringify(d)}`);
}

test('fixed concurrency, random prompts: all succeed, exact counts, ordered percentiles', () => {
  const out = path.join(tmp, 'c4.json');
  const r = benchServe(['--max-concurrency', '4', '--num-prompts', '8', '--dataset', 'random',
                        '--input-len', '24', '--output-len', '6', '--slo-ttft-ms', '60000',
                        '--slo-tpot-ms', '60000', '--price-per-hour', '2.5', '--json', out]);
  assert.match(r.stderr, /\[=+\] 8\/8 done, 0 failed/);  // the progress bar's last state
  const j = JSON.parse(fs.readFileSync(out, 'utf8'));
  assert.equal(j.model, MODEL_NAME);  // discovered through /v1/models
  assert.equal(j.runs.length, 1);
  const run = j.runs[0];
  assert.equal(run.completed, 8);
  assert.equal(run.failed, 0);
  assert.equal(run.max_concurrency, 4);
  assert.equal(run.input_tokens, 8 * 24);
  assert.equal(run.output_tokens, 8 * 6);
  for (const name of ['ttft_ms', 'tpot_ms', 'itl_ms', 'e2e_ms']) checkDistribution(run[name], name);
  assert.equal(run.ttft_ms.count, 8);
  assert.equal(run.tpot_ms.count, 8);
  assert.ok(run.ttft_ms.p50 <= run.e2e_ms.p50);
  assert.ok(run.duration_s > 0);
  assert.ok(Math.abs(run.output_throughput - run.output_tokens / run.duration_s) < 1e-6 * run.output_throughput);
  assert.ok(Math.abs(run.request_throughput - 8 / run.duration_s) < 1e-9 + 1e-6 * run.request_throughput);
  // Loose SLOs: every request is good, goodput equals throughput.
  assert.equal(run.good_requests, 8);
  assert.ok(Math.abs(run.output_goodput - run.output_throughput) < 1e-9);
  const cost = 2.5 * run.duration_s / 3600 / (run.output_tokens / 1e6);
  assert.ok(Math.abs(run.cost_per_million_tokens - cost) < 1e-6 * cost);
  assert.notEqual(j.throughput_under_slo, null);
  assert.equal(j.throughput_under_slo.run_index, 0);
  // The server's own accounting over the run (its /metrics before and after): the forward calls
  // lie inside the engine steps, the HTTP thread's CPU inside the process's, and the overhead
  // is the sum of the engine's scheduling share and the HTTP thread's CPU share.
  const sv = run.server;
  assert.ok(sv, 'no server section against a deepinfer server');
  assert.ok(sv.forward_s > 0 && sv.forward_s <= sv.engine_step_s, JSON.stringify(sv));
  assert.ok(sv.http_thread_cpu_s >= 0 && sv.http_thread_cpu_s <= sv.process_cpu_s, JSON.stringify(sv));
  assert.ok(sv.scheduling_fraction >= 0 && sv.scheduling_fraction < 1, JSON.stringify(sv));
  assert.ok(Math.abs(sv.overhead_fraction - sv.scheduling_fraction - sv.http_cpu_fraction) < 1e-12);
  assert.ok(sv.forward_busy_fraction > 0 && sv.forward_busy_fraction <= 1, JSON.stringify(sv));
  assert.match(r.stdout, /server: forward [0-9.]+% of the run; scheduling/);
});

test('a sweep draws fresh prompts at every point: nothing comes from the prefix cache', () => {
  // 160-token prompts span whole KV pages, so a prompt sent twice (the warm-up's, or an earlier
  // point's) would be served from the server's prefix cache and show in cached_input_tokens.
  const out = path.join(tmp, 'fresh.json');
  benchServe(['--max-concurrency', '2', '--sweep', '1,2', '--num-prompts', '3', '--dataset',
              'random', '--input-len', '160', '--output-len', '2', '--json', out, '--no-progress']);
  const j = JSON.parse(fs.readFileSync(out, 'utf8'));
  assert.deepEqual(j.runs.map((r) => r.max_concurrency), [1, 2]);
  for (const run of j.runs) {
    assert.equal(run.completed, 3);
    assert.equal(run.input_tokens, 3 * 160);
    assert.equal(run.cached_input_tokens, 0, JSON.stringify(run));
  }
});

test('Poisson sweep over a shared prefix: cache hits, tight SLO, plot', async () => {
  const hitsBefore = await metric(server.url, 'deepinfer_prefix_cache_hits_total');
  const out = path.join(tmp, 'sweep.json');
  const svg = path.join(tmp, 'sweep.svg');
  const haveGnuplot = spawnSync('sh', ['-c', 'command -v gnuplot']).status === 0;
  // A seed of its own: with the same seed as an earlier invocation against this server, the
  // first prefix would be that invocation's first prompt's head, already cached.
  const args = ['--request-rate', '4', '--sweep', '2,8', '--num-prompts', '6', '--dataset',
                'shared-prefix', '--prefix-len', '128', '--input-len', '8', '--output-len', '4',
                '--seed', '7',
                '--slo-ttft-ms', '0.001', '--json', out, '--no-progress'];
  if (haveGnuplot) args.push('--plot', svg);
  benchServe(args);
  const j = JSON.parse(fs.readFileSync(out, 'utf8'));
  assert.equal(j.sweep_over, 'request_rate');
  assert.deepEqual(j.runs.map((r) => r.request_rate), [2, 8]);
  for (const run of j.runs) {
    assert.equal(run.completed, 6);
    assert.equal(run.failed, 0);
    assert.equal(run.input_tokens, 6 * (128 + 8));
    // One prefix for all six prompts: the later ones find it in the server's prefix cache.
    assert.ok(run.cached_input_tokens > 0 && run.cached_input_tokens <= 5 * 128,
              JSON.stringify(run));
    assert.equal(run.good_requests, 0);  // no TTFT is under a microsecond
    assert.equal(run.request_goodput, 0);
  }
  assert.equal(j.throughput_under_slo, null);
  if (hitsBefore !== undefined) {
    const hitsAfter = await metric(server.url, 'deepinfer_prefix_cache_hits_total');
    assert.ok(hitsAfter > hitsBefore, `no prefix-cache hits: ${hitsBefore} -> ${hitsAfter}`);
  }
  if (haveGnuplot) {
    const text = fs.readFileSync(svg, 'utf8');
    assert.match(text, /<svg/);
    assert.match(text, /TTFT p90/);
  }
});

test('JSONL dataset with text prompts; a bad dataset is refused', () => {
  const data = path.join(tmp, 'prompts.jsonl');
  fs.writeFileSync(data, '{"prompt": "Hello there, how are you?", "max_tokens": 3}\n' +
                         '{"prompt": [1000, 1001, 1002], "output_len": 2}\n');
  const out = path.join(tmp, 'file.json');
  benchServe(['--max-concurrency', '2', '--num-prompts', '4', '--dataset', data, '--json', out,
              '--model', MODEL_NAME, '--no-progress']);
  const run = JSON.parse(fs.readFileSync(out, 'utf8')).runs[0];
  assert.equal(run.completed, 4);
  assert.equal(run.output_tokens, 3 + 2 + 3 + 2);
  assert.ok(run.input_tokens >= 2 * 3 + 2 * 2);
  fs.writeFileSync(data, '{"text": 1}\n');
  const bad = spawnSync(process.env.DEEPINFER_BIN,
                        ['bench-serve', '--base-url', server.url, '--dataset', data],
                        {encoding: 'utf8'});
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /no "prompt"/);
});
