// Shared by the server end-to-end tests: starts `deepinfer serve` on a random loopback port
// (--port 0; the URL is read from its start-up line), waits for /health, stops it with SIGTERM.
// Environment (set by tests/server/server_tests.cmake): DEEPINFER_BIN, DEEPINFER_TEST_MODEL,
// DEEPINFER_NPM_DIR (the npm --prefix holding openai and @anthropic-ai/sdk).
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

export const MODEL_NAME = 'test-model';

export function requireSdk(name) {
  const dir = process.env.DEEPINFER_NPM_DIR;
  if (!dir) throw new Error('DEEPINFER_NPM_DIR is not set');
  return createRequire(path.join(dir, 'node_modules', 'noop.js'))(name);
}

// The fetch to give an SDK client whose requests a test aborts (`{fetch: abortableFetch}`):
// undici from npm. Node 18's bundled fetch links a caller's AbortSignal to the request only
// through a weak reference, so after a garbage collection abort() neither rejects the call nor
// closes the connection (the server then never sees the client go away).
export const abortableFetch = requireSdk('undici').fetch;

// Runs the garbage collector (node --expose-gc) a few times, yielding between runs, so that an
// abort that depends on something only weakly held fails every time instead of under load.
export async function collectGarbage() {
  if (typeof globalThis.gc !== 'function') throw new Error('run node with --expose-gc');
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await new Promise((r) => setImmediate(r));
  }
}

export async function startServer(extraArgs = [], extraEnv = {}) {
  const bin = process.env.DEEPINFER_BIN;
  const model = process.env.DEEPINFER_TEST_MODEL;
  if (!bin || !model) throw new Error('DEEPINFER_BIN and DEEPINFER_TEST_MODEL must be set');
  // 512M of KV unless the test sets its own budget.
  const budget = extraArgs.includes('--kv-budget') ? [] : ['--kv-budget', '512M'];
  const proc = spawn(bin, ['serve', '--model', model, '--port', '0', '--served-model-name',
                           MODEL_NAME, ...budget, ...extraArgs],
                     {env: {...process.env, DEEPINFER_THREADS: '2', ...extraEnv},
                      stdio: ['ignore', 'pipe', 'pipe']});
  let stdout = '', stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({code, signal})));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server start timed out: ' + stderr)), 120000);
    proc.stdout.on('data', (d) => {
      stdout += d;
      const m = stdout.match(/listening on (http:\/\/[0-9.]+:[0-9]+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    exited.then(({code}) => { clearTimeout(timer); reject(new Error(`server exited ${code}: ${stderr}`)); });
  });
  const health = await fetch(url + '/health');
  if (health.status !== 200) throw new Error('health check failed: ' + health.status);
  return {
    url,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    // SIGTERM, then the exit status (the server drains and exits 0).
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}

export async function postJson(url, body, headers = {}) {
  const res = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json', ...headers},
                                body: typeof body === 'string' ? body : JSON.stringify(body)});
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return {status: res.status, headers: res.headers, json, text};
}

// Reads /metrics and returns the value of the first sample line starting with `name`.
export async function metric(url, name) {
  const text = await (await fetch(url + '/metrics')).text();
  for (const line of text.split('\n')) {
    if (line.startsWith(name + ' ') || line.startsWith(name + '{')) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return undefined;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Validates `value` against the JSON Schema with python3-jsonschema (the independent validator
// the structured-output tests use); returns '' when valid, else the validator's message.
export function schemaErrors(schema, value) {
  const script = 'import json, sys, jsonschema\n' +
      'd = json.load(sys.stdin)\n' +
      'try:\n    jsonschema.validate(d["value"], d["schema"])\n' +
      'except jsonschema.ValidationError as e:\n    print(e.message)\n';
  return execFileSync('python3', ['-c', script], {input: JSON.stringify({schema, value})})
      .toString().trim();
}
