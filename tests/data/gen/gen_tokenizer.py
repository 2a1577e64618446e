"""A tiny byte-level BPE tokenizer shaped like Qwen3.5's, and its reference encodings.

Built with the `tokenizers` library: NFC normaliser, Qwen3.5's split regex
(Qwen2's plus \\p{M}; llama.cpp calls it pre-tokenizer "qwen35"), byte-level
pre-tokenizer and decoder, BPE trained on gen/tokenizer_corpus.txt to
VOCAB_SIZE - len(SPECIALS) entries, then the special tokens appended at the
top ids, in the order Qwen3.5 has them.
"""
import os

from common import write_json

QWEN35_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
            "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
VOCAB_SIZE = 512


def build(corpus_path):
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors, trainers)
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    n_regular = VOCAB_SIZE - len(SPECIALS)
    trainer = trainers.BpeTrainer(vocab_size=n_regular, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    with open(corpus_path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    tok.train_from_iterator(lines, trainer=trainer)
    if tok.get_vocab_size() != n_regular:
        raise RuntimeError(f"trained {tok.get_vocab_size()} tokens, wanted {n_regular}")
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    assert sorted(ids.values()) == list(range(n_regular, VOCAB_SIZE)), ids
    return tok


def save(tok, out_dir):
    """tokenizer.json + tokenizer_config.json (transformers), vocab.json + merges.txt."""
    from transformers import PreTrainedTokenizerFast
    os.makedirs(out_dir, exist_ok=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None, bos_token=None,
                                   model_max_length=4096)
    fast.save_pretrained(out_dir)
    tok.model.save(out_dir)            # vocab.json, merges.txt (regular tokens only)
    tok.save(os.path.join(out_dir, "tokenizer.json"))


LLAMACPP_CHKTXT = (
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis "
    "concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 "
    "កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български "
    "''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? "
    "'M not sure I'll make it, 'D you like some tea? We'Ve a'lL")

CASES = [
    "", " ", "  ", "\n", "\n\n", "\r\n", " \r\n\r\n ", "\t", "\t\t x", "a", "ab", "hello",
    "Hello world", "Hello, world!", " leading space", "trailing space ", "many     spaces here",
    "The quick brown fox jumps over the lazy dog.",
    "I'll tell you what I've learned: you're right, they'd agree.",
    "DON'T SHOUT, I'M HERE, WE'LL SEE, IT'S 'RE",
    "0", "7", "42", "1234567890", "3.14159", "1e-6", "-7 +8", "v3.5.0 build #1234",
    "2026-12-01 09:35 UTC",
    "def forward(self, x):\n    return self.mlp(x) + x\n",
    "int main(void) { return 0; }",
    "if (x == NULL || n <= 0) { return -1; }",
    "{\"name\": \"qwen35\", \"layers\": 24}",
    "https://example.com/path?q=1&r=two#frag",
    "Über café naïve résumé Straße",
    "cafe\u0301 (decomposed accent: NFC makes it one code point)",
    "Привет, мир!", "γειά σου κόσμε", "مرحبا بالعالم",
    "你好，世界！", "我想在apple工作1314151天～", "こんにちは、世界。", "안녕하세요",
    "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "🚀", "😶\u200d🌫️", "👍🏽 🇩🇪 ❤️", "emoji🦙🦙inside",
    "... !!! ??? --- === *** ###",
    "((( ))) [[[ ]]] {{{ }}}",
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|vision_start|><|image_pad|><|image_pad|><|vision_end|>Describe this.",
    "<|endoftext|>",
    "text<|im_end|>more",
    "zzzzqqqqxxxx unseen words: quizzical jukebox",
    LLAMACPP_CHKTXT,
]


def reference(tok_dir, out_path):
    """Encodes CASES with the saved tokenizer through transformers' AutoTokenizer."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer
    hf = AutoTokenizer.from_pretrained(tok_dir)
    raw = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    cases = []
    for text in CASES:
        ids = hf.encode(text, add_special_tokens=False)
        raw_ids = raw.encode(text, add_special_tokens=False).ids
        decoded = hf.decode(ids, skip_special_tokens=False)
        cases.append({"text": text, "ids": ids, "decoded": decoded,
                      "roundtrip": decoded == text, "raw_tokenizers_agrees": raw_ids == ids})
    specials = {s: hf.convert_tokens_to_ids(s) for s in SPECIALS}
    write_json(out_path, {
        "generator": "tests/data/gen/gen_tokenizer.py",
        "tokenizer_dir": os.path.basename(tok_dir.rstrip("/")),
        "tokenizer_class": type(hf).__name__,
        "vocab_size": VOCAB_SIZE,
        "n_regular": VOCAB_SIZE - len(SPECIALS),
        "specials": specials,
        "pre_tokenizer_regex": QWEN35_SPLIT,
        "normalizer": "NFC",
        "add_special_tokens": False,
        "note": "ids from transformers AutoTokenizer.encode(text, add_special_tokens=False); "
                "special-token strings in the text are matched as specials. 'roundtrip' is "
                "decode(encode(x)) == x (false only where NFC changed the text).",
        "cases": cases,
    })
    return cases
