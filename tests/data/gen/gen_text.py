"""Tiny random Qwen3.5 text checkpoints (Qwen3_5ForCausalLM) and their reference outputs.

For each config: save_pretrained (config.json + model.safetensors, f32), reload
the saved files, then on CPU in f32:
  ref_prefill_logits.f32   [T, V]   one forward over all T tokens
  ref_decode_logits.f32    [T, V]   prefill of the first N tokens, then one token
                                    at a time with HF's cache (rows >= N)
  ref_chunked_logits.f32   [T, V]   chunks of C tokens with HF's cache
  ref_hidden_states.f32    [L+2, T, H]  embedding output, each decoder layer's
                                    output, the final norm's output (own hooks)
and ref.json describing them.
"""
import os
import shutil

import torch

from common import (make_config, max_abs, max_abs_diff, randomize_, rmsnorm_form, write_f32,
                    write_json)

CONFIGS = {
    # A: 3 linear : 1 full, DeltaNet 2 key heads / 4 value heads, tied embeddings,
    #    partial rotary 0.25 of head_dim 32 -> 8 rotary dims (4 frequencies).
    "qwen35-tiny-a": dict(
        seed=1001, n_tokens=40, prefill_n=23, chunk=7,
        config=dict(
            vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, head_dim=32,
            linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
            linear_num_key_heads=2, linear_num_value_heads=4,
            layer_types=["linear_attention"] * 3 + ["full_attention"],
            full_attention_interval=4,
            rms_norm_eps=1e-6, tie_word_embeddings=True, max_position_embeddings=4096,
            rope_parameters=dict(rope_type="default", rope_theta=10000000.0,
                                 partial_rotary_factor=0.25, mrope_section=[2, 1, 1],
                                 mrope_interleaved=True),
            partial_rotary_factor=0.25,      # top-level copy, as real checkpoints have
            hidden_act="silu", attention_bias=False)),
    # B: untied, pattern [linear, full, linear, full, linear], GQA 4 q / 2 kv heads of
    #    head_dim 24, partial rotary 0.5 (12 dims), DeltaNet 2/2 heads with key dim 24
    #    != value dim 32, conv kernel 3, eps 1e-5, theta 1e6, config vocab 520 > the
    #    tokenizer's 512 (padding rows, as real Qwen checkpoints have), 72 tokens so
    #    HF's chunked DeltaNet kernel (chunk 64) runs two chunks.
    "qwen35-tiny-b": dict(
        seed=2002, n_tokens=72, prefill_n=50, chunk=16,
        config=dict(
            vocab_size=520, hidden_size=96, intermediate_size=64, num_hidden_layers=5,
            num_attention_heads=4, num_key_value_heads=2, head_dim=24,
            linear_conv_kernel_dim=3, linear_key_head_dim=24, linear_value_head_dim=32,
            linear_num_key_heads=2, linear_num_value_heads=2,
            layer_types=["linear_attention", "full_attention", "linear_attention",
                         "full_attention", "linear_attention"],
            full_attention_interval=2,
            rms_norm_eps=1e-5, tie_word_embeddings=False, max_position_embeddings=4096,
            rope_parameters=dict(rope_type="default", rope_theta=1000000.0,
                                 partial_rotary_factor=0.5, mrope_section=[2, 2, 2],
                                 mrope_interleaved=True),
            partial_rotary_factor=0.5,       # else HF writes its BC default 0.25 here
            hidden_act="silu", attention_bias=False)),
}


def token_sequence(n, seed, n_regular):
    """n ids: random regular tokens, a repeated motif, and a few specials."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, n_regular, (n,), generator=gen).tolist()
    motif = ids[3:9]
    ids[20:26] = motif                      # repeats: same tokens at new positions
    ids[0] = n_regular + 1                  # <|im_start|>
    ids[-1] = n_regular + 2                 # <|im_end|>
    ids[n // 2] = ids[n // 2 - 1]           # a token repeated back to back
    return ids


class HiddenCapture:
    """Forward hooks: embedding output, every decoder layer's output, final norm output."""

    def __init__(self, text_model):
        self.rows = []
        self.handles = [text_model.embed_tokens.register_forward_hook(self._hook)]
        for layer in text_model.layers:
            self.handles.append(layer.register_forward_hook(self._hook))
        self.handles.append(text_model.norm.register_forward_hook(self._hook))

    def _hook(self, _mod, _inp, out):
        t = out[0] if isinstance(out, (tuple, list)) else out
        self.rows.append(t.detach().clone())

    def close(self):
        for h in self.handles:
            h.remove()


def run_with_cache(model, ids, splits):
    """Feeds ids in consecutive pieces of the given lengths with one cache; returns logits."""
    pkv = None
    rows = []
    start = 0
    for n in splits:
        piece = ids[:, start:start + n]
        out = model(input_ids=piece, past_key_values=pkv, use_cache=True)
        pkv = out.past_key_values
        rows.append(out.logits[0])
        start += n
    return torch.cat(rows, dim=0)


def generate(name, spec, out_root, tok_dir, log):
    import transformers
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(spec["seed"])
    cfg = make_config(Qwen3_5TextConfig, dict(spec["config"]), log)
    model = Qwen3_5ForCausalLM(cfg).to(torch.float32).eval()
    unknown = randomize_(model, spec["seed"])
    if unknown:
        log(f"{name}: parameters left at HF init: {unknown}")
    model.save_pretrained(out_dir, safe_serialization=True)
    for f in os.listdir(tok_dir):
        shutil.copy(os.path.join(tok_dir, f), out_dir)

    model = Qwen3_5ForCausalLM.from_pretrained(out_dir, dtype=torch.float32,
                                               attn_implementation="eager").eval()
    n_regular = 512 - 7
    T = spec["n_tokens"]
    tokens = token_sequence(T, spec["seed"] + 1, n_regular)
    ids = torch.tensor([tokens], dtype=torch.long)
    with torch.no_grad():
        cap = HiddenCapture(model.model)
        prefill = model(input_ids=ids, use_cache=False).logits[0]
        cap.close()
        hidden = torch.stack([r[0] for r in cap.rows], dim=0)
        N = spec["prefill_n"]
        decode = run_with_cache(model, ids, [N] + [1] * (T - N))
        C = spec["chunk"]
        chunked = run_with_cache(model, ids, [C] * (T // C) + ([T % C] if T % C else []))
        # The same logits with a single-token-only pass (N = 1): decode from the start.
        decode_all = run_with_cache(model, ids, [1] * T)

    def raw(name, tensor):
        return write_f32(os.path.join(out_dir, f"ref_{name}.f32"), tensor)

    # key order as in the committed ref.json files
    files = {
        "prefill_logits": dict(file="ref_prefill_logits.f32",
                               shape=raw("prefill_logits", prefill)),
        "decode_logits": dict(file="ref_decode_logits.f32", prefill_n=N,
                              shape=raw("decode_logits", decode)),
        "chunked_logits": dict(file="ref_chunked_logits.f32", chunk=C,
                               shape=raw("chunked_logits", chunked)),
        "hidden_states": dict(file="ref_hidden_states.f32", shape=raw("hidden_states", hidden),
                              rows="embedding output, decoder layer 0..L-1 outputs, "
                                   "final norm output"),
    }
    layer_norm_form = rmsnorm_form(model.model.norm)
    gated = None
    for layer in model.model.layers:
        if hasattr(layer, "linear_attn"):
            gated = type(layer.linear_attn.norm).__name__
            break
    ref = {
        "generator": "tests/data/gen/gen_text.py",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "model_class": type(model).__name__, "config_class": type(cfg).__name__,
        "model_type": cfg.model_type,
        "seed": spec["seed"],
        "n_vocab": cfg.vocab_size, "hidden_size": cfg.hidden_size,
        "n_layers": cfg.num_hidden_layers, "layer_types": list(cfg.layer_types),
        "dtype": "float32", "device": "cpu", "attn_implementation": "eager",
        "tokens": tokens, "n_tokens": T,
        "files": files,
        "format": "raw little-endian float32, C order (row = position), no header",
        "max_abs_logit": max_abs(prefill),
        "max_abs_diff_decode_vs_prefill": max_abs_diff(decode, prefill),
        "max_abs_diff_chunked_vs_prefill": max_abs_diff(chunked, prefill),
        "max_abs_diff_decode_from_0_vs_prefill": max_abs_diff(decode_all, prefill),
        "rmsnorm_form": layer_norm_form,
        "gated_norm_class": gated,
        "tokenizer": "the shared tiny tokenizer (copied into this folder)",
    }
    write_json(os.path.join(out_dir, "ref.json"), ref)
    log(f"{name}: max|logit| {ref['max_abs_logit']:.4f}  decode-prefill "
        f"{ref['max_abs_diff_decode_vs_prefill']:.3g}  chunked-prefill "
        f"{ref['max_abs_diff_chunked_vs_prefill']:.3g}  decode0-prefill "
        f"{ref['max_abs_diff_decode_from_0_vs_prefill']:.3g}  norm {layer_norm_form}")
    return ref
