#!/usr/bin/env node
// split_js.js KIND CORPUS OUT: the pre-tokenizer split of each line of
// CORPUS (valid UTF-8: tok_check jsview) by JavaScript's regex engine, as
// transformers.js builds it (the case-insensitive contractions rewritten to
// ASCII classes, flags "gu"), one line of hex pieces per line. KIND is qwen2
// or qwen35 (Qwen3.5's tokenizer.json pattern, from llama.cpp's
// llama-vocab.cpp comment). tok_check split writes the same format from our
// splitter; compare.sh diffs the two.
'use strict';
const fs = require('fs');
const C = "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";
const patterns = {
  qwen2: C + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen35: C + "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
const re = new RegExp(patterns[process.argv[2]], 'gu');
const text = fs.readFileSync(process.argv[3], 'utf8');
const body = text.endsWith('\n') ? text.slice(0, -1) : text;
const hex = (s) => Buffer.from(s, 'utf8').toString('hex');
const out = [];
for (const line of body.split('\n')) {
  const pieces = [];
  let at = 0;
  for (const m of line.matchAll(re)) {
    if (m.index > at) pieces.push(hex(line.slice(at, m.index))); // unmatched gap (never expected)
    pieces.push(hex(m[0]));
    at = m.index + m[0].length;
  }
  if (at < line.length) pieces.push(hex(line.slice(at)));
  out.push(pieces.join(' '));
}
fs.writeFileSync(process.argv[4], out.join('\n') + '\n');
