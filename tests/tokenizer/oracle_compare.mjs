// Differential test against the Hugging Face `tokenizers` library (npm @anush008/tokenizers, the
// Rust crate as a Node addon): generates a seeded corpus (mixed scripts, digit runs, whitespace
// runs, emoji sequences, special-token strings, code, random code points), encodes it with the
// oracle and with `deepinfer tokenize`, and decodes random id lists with both (special tokens
// kept and skipped). Exit 0 when every record agrees; otherwise prints the first mismatches.
//
// usage: node oracle_compare.mjs NODE_MODULES_DIR TOKENIZER_DIR DEEPINFER_BINARY [N_TEXTS]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [nodeModules, tokenizerDir, deepinfer, countArg] = process.argv.slice(2);
if (!deepinfer) {
  console.error('usage: node oracle_compare.mjs NODE_MODULES_DIR TOKENIZER_DIR DEEPINFER [N]');
  process.exit(2);
}
const oraclePath = path.resolve(nodeModules, '@anush008', 'tokenizers');
const tokenizerJson = path.join(tokenizerDir, 'tokenizer.json');
for (const p of [oraclePath, tokenizerJson, deepinfer]) {
  if (!existsSync(p)) {
    console.error(`missing ${p} (run scripts/install-deps.sh and build first)`);
    process.exit(1);
  }
}
const { Tokenizer } = createRequire(import.meta.url)(oraclePath);
const oracle = Tokenizer.fromFile(tokenizerJson);
const nTexts = Number(countArg ?? 3000);

// mulberry32: a small seeded generator, so that the corpus is the same on every run.
let state = 0x5eed1234;
function rand() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randInt = (n) => Math.floor(rand() * n);
const pick = (xs) => xs[randInt(xs.length)];

const added = JSON.parse(readFileSync(tokenizerJson, 'utf8')).added_tokens.map((t) => t.content);
const words = ['the', 'The', 'THE', ' quick', 'brown', "don't", "I'M", 'naïve', 'café', 'Straße',
  'über', 'hello', 'world', 'token', 'DeepSeek', 'x', 'ab', 'supercalifragilistic', 'e.g.',
  'http://example.com/a?b=c&d=e', 'user@mail.org', 'C++', 'O(n^2)', '$100', '50%', '#tag', '@you'];
const scripts = ['中文字符测试', '日本語のテキスト', 'カタカナ', 'ﾊﾝｶｸ', '한국어 문장', 'Привет мир',
  'Ελληνικά', 'עברית', 'العربية', 'فارسی', 'हिन्दी', 'ไทย', 'தமிழ்', 'Tiếng Việt', '𠀀𠀁', '龥龦',
  '〇一二', 'ｆｕｌｌｗｉｄｔｈ', '①②③', 'Ⅻ', '½¾', 'x²', '٣٤٥', '१२३', '１２３'];
const emoji = ['😀', '👍🏽', '👨‍👩‍👧‍👦', '🇺🇸', '🏳️‍🌈', '1️⃣', '❤️', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '🤖', '©', '™'];
const spaces = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\r', ' \n ', '\u00a0', '\u3000',
  '\u2028', '\u0085', '\u000b', '\u000c', '\u200b', '\ufeff', ' \t \n'];
const code = ['def f(x):\n    return x + 1\n', 'int main() { return 0; }', '{"a": [1, 2.5e-3]}',
  '<div class="x">hi</div>', 'SELECT * FROM t WHERE id = 42;', 'x => x * 2', '$ ls -la | grep foo',
  '#include <vector>', '\tif (a && b) {\n\t\tc();\n\t}', 'fn main() -> Result<(), E> {}',
  '- [ ] item\n- [x] done', '| a | b |\n|---|---|', '\\frac{a}{b}', 'a\\nb', '::', '...', '!!!',
  '?!', '«»', '“quoted”', '—', '--', '__init__', '0x1F', '3.14159', '1,000,000', '12:30'];
const marks = ['\u0301', '\u0308', '\u0327', '\u20dd', '\u0903', '\u093e', '\u0e31'];

// Random code points come from blocks whose contents did not change after Unicode 13, or from
// planes 4..13 (unassigned in every version). Known gap: our pre-tokenizer uses PCRE2's Unicode
// tables (14.0 in Debian 12's libpcre2) while the oracle's Oniguruma is newer, so characters
// assigned in Unicode 15+ (e.g. U+A7DA, U+116D0 digits) can split differently.
const stableRanges = [[0x0, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f],
  [0x1100, 0x11ff], [0x2000, 0x22ff], [0x2500, 0x27bf], [0x3000, 0x30ff], [0x4e00, 0x9fef],
  [0xac00, 0xd7a3], [0xe000, 0xf8ff], [0xff00, 0xffef], [0x1d400, 0x1d7ff], [0x1f300, 0x1f64f],
  [0x20000, 0x2a6d6], [0x40000, 0xdffff]];
function randomCodePoint() {
  const [lo, hi] = pick(stableRanges);
  return String.fromCodePoint(lo + randInt(hi - lo + 1));
}
function digits() {
  let s = '';
  const n = 1 + randInt(20);
  for (let i = 0; i < n; i++) s += String(randInt(10));
  return s;
}
function piece() {
  const r = rand();
  if (r < 0.25) return pick(words);
  if (r < 0.37) return pick(scripts);
  if (r < 0.45) return pick(emoji);
  if (r < 0.58) return pick(spaces);
  if (r < 0.68) return pick(code);
  if (r < 0.75) return digits();
  if (r < 0.80) return pick(added);
  if (r < 0.84) return pick(added).slice(0, 1 + randInt(6));  // near misses
  if (r < 0.88) return pick(words) + pick(marks);
  return randomCodePoint();
}
function text() {
  let s = '';
  const n = 1 + randInt(24);
  for (let i = 0; i < n; i++) s += piece();
  if (rand() < 0.05) s = pick(words).repeat(50 + randInt(200));
  return s;
}

const records = [];
const expected = [];
for (let i = 0; i < nTexts; i++) {
  const t = text();
  const enc = await oracle.encode(t, null, { addSpecialTokens: false });
  records.push({ kind: 'encode', text: t });
  expected.push({ ids: Array.from(enc.getIds()) });
}
const nIds = 128815;
for (let i = 0; i < 500; i++) {
  const ids = [];
  const n = 1 + randInt(30);
  for (let k = 0; k < n; k++) ids.push(rand() < 0.2 ? randInt(300) : randInt(nIds));
  const skip = i % 2 === 1;
  records.push({ kind: 'decode', ids, skip_special_tokens: skip });
  expected.push({ text: await oracle.decode(ids, skip) });
}

const input = records.map((r) => JSON.stringify(r)).join('\n') + '\n';
const run = spawnSync(deepinfer, ['tokenize', '--tokenizer', tokenizerDir],
  { input, maxBuffer: 1 << 30, encoding: 'utf8' });
if (run.status !== 0) {
  console.error(`deepinfer tokenize exited with ${run.status}: ${run.stderr}`);
  process.exit(1);
}
const lines = run.stdout.split('\n');
if (lines.at(-1) === '') lines.pop();
if (lines.length !== records.length) {
  console.error(`expected ${records.length} output lines, got ${lines.length}`);
  process.exit(1);
}
let bad = 0;
for (let i = 0; i < records.length; i++) {
  const got = JSON.stringify(JSON.parse(lines[i]));
  const want = JSON.stringify(expected[i]);
  if (got !== want && ++bad <= 10) {
    console.error(`mismatch on ${JSON.stringify(records[i])}\n  oracle:    ${want}\n  deepinfer: ${got}`);
  }
}
const nEncode = nTexts, nDecode = records.length - nTexts;
console.log(`${records.length - bad}/${records.length} records agree (${nEncode} encode, ${nDecode} decode)`);
process.exit(bad === 0 ? 0 : 1);
