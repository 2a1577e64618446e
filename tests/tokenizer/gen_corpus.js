#!/usr/bin/env node
// gen_corpus.js > corpus.txt: the tokenizer comparison corpus, one sample
// per line, deterministic (fixed-seed PRNG). Sections: English prose and
// tables (this repository's docs), C code (its sources), CJK, other scripts
// with combining marks, emoji sequences, numbers, whitespace runs,
// contractions, special tokens, random code points, and invalid UTF-8.
// Text lines are NFC (Hugging Face's Qwen normalizer is NFC; ours applies
// none, so only NFC text can be compared). U+0085 and U+FEFF are left out:
// JS's \s differs from Unicode White_Space exactly there (see
// docs/tokenizer.md). Invalid lines are raw bytes: tok_check jsview gives
// the package the U+FFFD view of them.
'use strict';
const fs = require('fs');
const path = require('path');
const root = path.join(__dirname, '..', '..');

let seed = 0x5eed1234n;
function rnd() { // splitmix64 -> [0, 1)
  seed = (seed + 0x9E3779B97F4A7C15n) & 0xFFFFFFFFFFFFFFFFn;
  let z = seed;
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & 0xFFFFFFFFFFFFFFFFn;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & 0xFFFFFFFFFFFFFFFFn;
  return Number((z ^ (z >> 31n)) >> 11n) / 2 ** 53;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const int = (n) => Math.floor(rnd() * n);

const out = []; // Buffers
const text = (s) => {
  s = s.normalize('NFC').replace(/[\n\u0085\uFEFF]/g, ' ');
  out.push(Buffer.from(s, 'utf8'));
};

function filesUnder(dir, ext) {
  const res = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) res.push(...filesUnder(p, ext));
    else if (p.endsWith(ext)) res.push(p);
  }
  return res;
}

// 1. English prose, markdown tables, shell commands: the docs.
for (const f of [path.join(root, 'README.md'), ...filesUnder(path.join(root, 'docs'), '.md')])
  for (const l of fs.readFileSync(f, 'utf8').split('\n')) if (l.trim()) text(l);
// 2. Code: every 4th line of the library's C sources (indentation kept).
let k = 0;
for (const f of filesUnder(path.join(root, 'src'), '.c'))
  for (const l of fs.readFileSync(f, 'utf8').split('\n')) if (l.trim() && k++ % 4 === 0) text(l);

// 3. CJK and other scripts.
const phrases = [
  '你好，世界！今天天气很好。', '我们在设备上运行大语言模型，每一个字节都有类型。', '中文分词测试：北京大学生前来应聘',
  '日本語のテキストです。東京は晴れ。', 'カタカナとひらがなの混在テスト', '한국어 문장입니다. 서울은 맑음.',
  '繁體中文與简体中文混合', '「引号」『书名号』《标题》——破折号……省略号', '１２３全角数字ＡＢＣ全角字母',
  'Привет, мир! Это тест токенизатора.', 'Γειά σου Κόσμε', 'مرحبا بالعالم، هذا اختبار', 'שלום עולם',
  'नमस्ते दुनिया, यह एक परीक्षण है', 'สวัสดีชาวโลก ทดสอบภาษาไทย', 'Xin chào thế giới, đây là bài kiểm tra',
  'Ünïcödé àccents: café, naïve, façade, jalapeño', 'ǅungla ǈudi ǋovek', 'ﬁ ﬂ ligatures ǆ',
  'a\u0301 e\u0308 combining: \u0915\u094d\u0937 \u0e01\u0e34', 'Ελληνικά: αβγδε ΑΒΓΔΕ', 'Tiếng Việt có dấu',
  'ᚠᛇᚻ᛫ᛒᛦᚦ runes', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝓜𝓪𝓽𝓱', '𐍈 gothic 𐌰𐌱', 'ʻOkina ʻōlelo Hawaiʻi',
];
const cjkRanges = [[0x4e00, 0x9fff], [0x3040, 0x309f], [0x30a0, 0x30ff], [0xac00, 0xd7a3], [0x3000, 0x303f], [0xff00, 0xffef]];
for (let i = 0; i < 600; i++) {
  let s = '';
  const n = 1 + int(30);
  for (let j = 0; j < n; j++) {
    const r = rnd();
    if (r < 0.7) { const [a, b] = pick(cjkRanges); s += String.fromCodePoint(a + int(b - a + 1)); }
    else if (r < 0.8) s += pick([' ', '，', '。', '、', '！', '？', ' ']);
    else if (r < 0.9) s += pick(['AI', 'GPU', 'Qwen', '3.5', '2026', 'ok', 'GGUF']);
    else s += pick(phrases).slice(0, 1 + int(6));
  }
  text(i < phrases.length ? phrases[i] : s);
}

// 4. Emoji: ZWJ families, skin tones, flags, keycaps, variation selectors.
const emoji = ['😀', '👍', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷', '🇯🇵', '1️⃣', '❤️', '✈️', '🧑🏿‍💻', '🫠', '🦀', '🐍',
  '☕', '🎉', '💯', '🤖', '🚀', '👩‍🔬', '©', '™', '↔', '∑', '≠', '√', '∞', '€', '¥', '£'];
for (let i = 0; i < 500; i++) {
  let s = '';
  const n = 1 + int(12);
  for (let j = 0; j < n; j++) s += rnd() < 0.6 ? pick(emoji) : pick([' ', 'ok ', 'great', '!', ' wow ', ':', '#tag', '@you']);
  text(s);
}

// 5. Numbers.
for (let i = 0; i < 500; i++) {
  const f = [
    () => String(int(1e9)), () => (rnd() * 1e4).toFixed(int(6)), () => `${int(10000)},${String(int(1000)).padStart(3, '0')}`,
    () => `0x${int(2 ** 31).toString(16)}`, () => `${int(100)}e-${int(20)}`, () => `2026-${1 + int(12)}-${1 + int(28)}`,
    () => `+1 (${int(1000)}) ${int(1000)}-${int(10000)}`, () => `${int(100)}%`, () => `v${int(10)}.${int(20)}.${int(100)}`,
    () => `${int(1e6)}${pick(['km', 'MiB', 'ms', '°C', '$'])}`, () => '٣٤٥ ७८९ ๑๒๓ Ⅻ ½ ²³',
  ];
  text(Array.from({ length: 1 + int(5) }, () => pick(f)()).join(pick([' ', ', ', '; ', ' + ', ''])));
}

// 6. Whitespace runs (no \n inside a line; the whole-file pass covers it).
const ws = [' ', '  ', '    ', '\t', '\t\t', '\r', '\u00a0', '\u3000', '\u2003', '\u2009', '\u000b', '\u000c', '\u2028', '\u202f'];
for (let i = 0; i < 500; i++) {
  let s = '';
  const n = 1 + int(10);
  for (let j = 0; j < n; j++) s += rnd() < 0.5 ? Array.from({ length: 1 + int(4) }, () => pick(ws)).join('') : pick(['word', 'x', '!', '(', 'a.b', '123', 'é', '中']);
  text(s);
}
for (let i = 0; i < 60; i++) out.push(Buffer.from('')); // blank lines: \n runs in the whole file

// 7. Contractions and case.
const words = ['I', 'you', 'WE', 'They', 'it', 'she', 'Don', 'can', 'SHE', 'o', 'rock', "'"];
const cons = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'x", "'", "''"];
for (let i = 0; i < 300; i++) text(Array.from({ length: 1 + int(6) }, () => pick(words) + pick(cons) + pick(['', ' ', 'n', 'ing'])).join(pick([' ', ''])));

// 8. Specials inside text (the package splits on every added token).
const specials = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<|vision_start|>', '<|vision_end|>', '<|image_pad|>',
  '<think>', '</think>', '<tool_call>', '</tool_call>', '<|fim_prefix|>', '<|im_start', 'im_end|>', '<|', '|>'];
for (let i = 0; i < 300; i++)
  text(Array.from({ length: 1 + int(6) }, () => (rnd() < 0.5 ? pick(specials) : pick(['user', ' hello', 'assistant', ' ', '\t', 'x<y', '<<', '>>']))).join(''));

// 9. Random code points (valid scalar values, all planes).
for (let i = 0; i < 600; i++) {
  let s = '';
  const n = 1 + int(20);
  for (let j = 0; j < n; j++) {
    const r = rnd();
    let cp = r < 0.3 ? 0x20 + int(0x60) : r < 0.6 ? 0xa0 + int(0x2000) : r < 0.9 ? int(0x10000) : 0x10000 + int(0x100000);
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp < 0x20 || cp === 0x85 || cp === 0xfeff || cp === 0x7f) cp = 0x41 + int(26);
    s += String.fromCodePoint(cp);
  }
  text(s);
}

// 10. Invalid UTF-8: stray continuation bytes, truncated and overlong
// sequences, surrogates, bytes F5..FF, mixed with text.
const bad = [[0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80],
  [0xf5], [0xff], [0xfe], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3], [0xe4, 0xb8], [0x00]];
for (let i = 0; i < 400; i++) {
  const parts = [];
  const n = 1 + int(8);
  for (let j = 0; j < n; j++) {
    const r = rnd();
    if (r < 0.4) parts.push(Buffer.from(pick(bad)));
    else if (r < 0.5) parts.push(Buffer.from(Array.from({ length: 1 + int(4) }, () => 0x80 + int(0x80))));
    else parts.push(Buffer.from(pick([' hello', 'abc', '中文', '😀', ' ', '123', 'é', '\t']), 'utf8'));
  }
  const b = Buffer.concat(parts), view = new TextDecoder().decode(b);
  if (view === view.normalize('NFC')) out.push(b); // valid parts must stay NFC
  else i--;
}

const nl = Buffer.from('\n');
process.stdout.write(Buffer.concat(out.flatMap((b) => [b, nl])));
console.error(`gen_corpus.js: ${out.length} lines`);
