#!/usr/bin/env python3
"""An independent numpy forward pass of the tiny checkpoints, written from the
formulas in tests/data/README.md, compared with Hugging Face's reference files.

It checks the README: if these few lines of numpy reproduce transformers'
logits, hidden states and image embeddings, the README is a correct spec of
what the runtime has to compute. float64 throughout; the recurrent (one token
at a time) DeltaNet form, so it also shows the recurrent form equals HF's
chunked prefill. Needs only numpy (no torch).

Usage: check_spec_numpy.py [tests/data]   exit 0 = all within tolerance,
1 = a mismatch, 77 = numpy missing (a CTest skip).
"""
import json
import os
import struct
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

# max |ours - HF| must stay below this fraction of max |HF| (issue 9's bar).
TOLERANCE = 1e-3


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(blob, "<f4", (b - a) // 4, 8 + n + a).reshape(t["shape"])
    return {k: v.astype(np.float64) for k, v in out.items()}


def load_raw(folder, ref, key, dtype="<f4"):
    entry = ref["files"][key]
    return np.fromfile(os.path.join(folder, entry["file"]), dtype).reshape(entry["shape"])


def rmsnorm(x, w, eps, one_plus):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y * (1.0 + w if one_plus else w)


def layernorm(x, w, b, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def deltanet(x, W, p, cfg, eps):
    """One Gated DeltaNet mixer over x [T, hidden], recurrent form."""
    T = x.shape[0]
    nk, nv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    K = cfg["linear_conv_kernel_dim"]
    mixed = x @ W[p + "in_proj_qkv.weight"].T                      # [T, C]
    conv_w = W[p + "conv1d.weight"][:, 0, :]                        # [C, K]
    padded = np.concatenate([np.zeros((K - 1, mixed.shape[1])), mixed])
    conv = sum(conv_w[:, j] * padded[j:j + T] for j in range(K))
    conv = silu(conv)
    q = conv[:, :nk * dk].reshape(T, nk, dk)
    k = conv[:, nk * dk:2 * nk * dk].reshape(T, nk, dk)
    v = conv[:, 2 * nk * dk:].reshape(T, nv, dv)
    q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6) / np.sqrt(dk)
    k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    r = nv // nk
    q, k = np.repeat(q, r, axis=1), np.repeat(k, r, axis=1)         # value head h -> key h // r
    beta = sigmoid(x @ W[p + "in_proj_b.weight"].T)                 # [T, nv]
    g = -np.exp(W[p + "A_log"]) * softplus(x @ W[p + "in_proj_a.weight"].T + W[p + "dt_bias"])
    S = np.zeros((nv, dk, dv))
    out = np.zeros((T, nv, dv))
    for t in range(T):
        S = S * np.exp(g[t])[:, None, None]
        kv_mem = np.einsum("hkv,hk->hv", S, k[t])
        delta = (v[t] - kv_mem) * beta[t][:, None]
        S = S + np.einsum("hk,hv->hkv", k[t], delta)
        out[t] = np.einsum("hkv,hk->hv", S, q[t])
    z = (x @ W[p + "in_proj_z.weight"].T).reshape(T, nv, dv)
    out = rmsnorm(out, W[p + "norm.weight"], eps, one_plus=False) * silu(z)
    return out.reshape(T, nv * dv) @ W[p + "out_proj.weight"].T


def rope_angles(cfg, positions):
    """positions [3, T] (t, h, w) -> angles [T, rot/2] with interleaved M-RoPE sections."""
    rp = cfg["rope_parameters"]
    hd = cfg["head_dim"]
    rot = int(hd * rp["partial_rotary_factor"])
    inv = 1.0 / rp["rope_theta"] ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    sec = rp.get("mrope_section", [rot // 2, 0, 0])
    axis = np.zeros(rot // 2, dtype=int)
    for i in range(rot // 2):
        if i % 3 == 1 and i < 3 * sec[1]:
            axis[i] = 1
        elif i % 3 == 2 and i < 3 * sec[2]:
            axis[i] = 2
    return positions[axis].T * inv                                 # [T, rot/2]


def attention(x, W, p, cfg, angles):
    T = x.shape[0]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    qg = (x @ W[p + "q_proj.weight"].T).reshape(T, nh, 2 * hd)
    q, gate = qg[..., :hd], qg[..., hd:].reshape(T, nh * hd)
    k = (x @ W[p + "k_proj.weight"].T).reshape(T, nkv, hd)
    v = (x @ W[p + "v_proj.weight"].T).reshape(T, nkv, hd)
    q = rmsnorm(q, W[p + "q_norm.weight"], eps, one_plus=True)
    k = rmsnorm(k, W[p + "k_norm.weight"], eps, one_plus=True)
    rot = 2 * angles.shape[1]
    cos = np.cos(np.concatenate([angles, angles], -1))[:, None, :]
    sin = np.sin(np.concatenate([angles, angles], -1))[:, None, :]
    q = np.concatenate([q[..., :rot] * cos + rotate_half(q[..., :rot]) * sin, q[..., rot:]], -1)
    k = np.concatenate([k[..., :rot] * cos + rotate_half(k[..., :rot]) * sin, k[..., rot:]], -1)
    group = nh // nkv
    out = np.zeros((T, nh, hd))
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for h in range(nh):
        s = q[:, h] @ k[:, h // group].T / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        out[:, h] = (s / s.sum(-1, keepdims=True)) @ v[:, h // group]
    return (out.reshape(T, nh * hd) * sigmoid(gate)) @ W[p + "o_proj.weight"].T


def text_forward(W, prefix, cfg, x, positions):
    """x: input embeddings [T, hidden] -> (logits, hidden rows as ref_hidden_states)."""
    eps = cfg["rms_norm_eps"]
    rows = [x]
    angles = rope_angles(cfg, positions)
    for i, kind in enumerate(cfg["layer_types"]):
        p = f"{prefix}layers.{i}."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps, one_plus=True)
        if kind == "linear_attention":
            x = x + deltanet(h, W, p + "linear_attn.", cfg, eps)
        else:
            x = x + attention(h, W, p + "self_attn.", cfg, angles)
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps, one_plus=True)
        mlp = silu(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)
        x = x + mlp @ W[p + "mlp.down_proj.weight"].T
        rows.append(x)
    x = rmsnorm(x, W[prefix + "norm.weight"], eps, one_plus=True)
    rows.append(x)
    head = W.get("lm_head.weight", W[prefix + "embed_tokens.weight"])
    return x @ head.T, np.stack(rows)


def vision_forward(W, vcfg, pixels, grid):
    """pixels [n, 1536] in the processor's order -> (stages [4, n, hidden], merged)."""
    p = "model.visual."
    hidden, heads = vcfg["hidden_size"], vcfg["num_heads"]
    hd = hidden // heads
    m = vcfg["spatial_merge_size"]
    _, gh, gw = grid
    n = pixels.shape[0]
    patch = pixels @ W[p + "patch_embed.proj.weight"].reshape(hidden, -1).T
    patch = patch + W[p + "patch_embed.proj.bias"]
    # patch coordinates in merge-window order: (h/m, w/m, m, m)
    hh, ww = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
    order = lambda a: a.reshape(gh // m, m, gw // m, m).transpose(0, 2, 1, 3).reshape(-1)
    ph, pw = order(hh), order(ww)
    # learned positions: bilinear, align_corners=True, from side x side to gh x gw
    side = int(round(vcfg["num_position_embeddings"] ** 0.5))
    table = W[p + "pos_embed.weight"].reshape(side, side, hidden)
    fy = ph * (side - 1) / (gh - 1)
    fx = pw * (side - 1) / (gw - 1)
    y0, x0 = np.floor(fy).astype(int), np.floor(fx).astype(int)
    y1, x1 = np.minimum(y0 + 1, side - 1), np.minimum(x0 + 1, side - 1)
    dy, dx = (fy - y0)[:, None], (fx - x0)[:, None]
    pos = (table[y0, x0] * (1 - dy) * (1 - dx) + table[y0, x1] * (1 - dy) * dx
           + table[y1, x0] * dy * (1 - dx) + table[y1, x1] * dy * dx)
    x = patch + pos
    stages = [patch, x]
    # 2D rotary: first hd/4 frequencies rotate by row, next hd/4 by column
    inv = 1.0 / 10000.0 ** (np.arange(0, hd // 2, 2, dtype=np.float64) / (hd // 2))
    ang = np.concatenate([ph[:, None] * inv, pw[:, None] * inv], -1)
    cos = np.cos(np.concatenate([ang, ang], -1))[:, None, :]
    sin = np.sin(np.concatenate([ang, ang], -1))[:, None, :]
    for b in range(vcfg["depth"]):
        q_ = f"{p}blocks.{b}."
        h = layernorm(x, W[q_ + "norm1.weight"], W[q_ + "norm1.bias"])
        qkv = (h @ W[q_ + "attn.qkv.weight"].T + W[q_ + "attn.qkv.bias"]).reshape(n, 3, heads, hd)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = np.zeros((n, heads, hd))
        for hh_ in range(heads):
            s = q[:, hh_] @ k[:, hh_].T / np.sqrt(hd)
            s = np.exp(s - s.max(-1, keepdims=True))
            att[:, hh_] = (s / s.sum(-1, keepdims=True)) @ v[:, hh_]
        x = x + att.reshape(n, hidden) @ W[q_ + "attn.proj.weight"].T + W[q_ + "attn.proj.bias"]
        h = layernorm(x, W[q_ + "norm2.weight"], W[q_ + "norm2.bias"])
        h = gelu_tanh(h @ W[q_ + "mlp.linear_fc1.weight"].T + W[q_ + "mlp.linear_fc1.bias"])
        x = x + h @ W[q_ + "mlp.linear_fc2.weight"].T + W[q_ + "mlp.linear_fc2.bias"]
        stages.append(x)
    mp = p + "merger."
    h = layernorm(x, W[mp + "norm.weight"], W[mp + "norm.bias"]).reshape(n // (m * m), -1)
    h = gelu_erf(h @ W[mp + "linear_fc1.weight"].T + W[mp + "linear_fc1.bias"])
    merged = h @ W[mp + "linear_fc2.weight"].T + W[mp + "linear_fc2.bias"]
    return np.stack(stages), merged


def mrope_positions(ids, image_id, gh, gw):
    """The README's rule: text (p, p, p); the image run (p, p + row, p + col)."""
    pos, p, i = [], 0, 0
    while i < len(ids):
        if ids[i] != image_id:
            pos.append((p, p, p))
            p, i = p + 1, i + 1
            continue
        for kk in range(gh * gw):
            pos.append((p, p + kk // gw, p + kk % gw))
        i += gh * gw
        p += max(gh, gw)
    return np.array(pos, dtype=np.float64).T


class Report:
    def __init__(self):
        self.failed = False

    def compare(self, what, ours, ref):
        top = float(np.abs(ref).max())
        diff = float(np.abs(ours - ref).max())
        ok = diff <= TOLERANCE * top
        self.failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: max|diff| {diff:.3g}, max|ref| {top:.4g}, "
              f"ratio {diff / top:.3g}")


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    rep = Report()
    for name in ("qwen35-tiny-a", "qwen35-tiny-b"):
        folder = os.path.join(data, name)
        cfg = json.load(open(os.path.join(folder, "config.json")))
        ref = json.load(open(os.path.join(folder, "ref.json")))
        W = load_safetensors(os.path.join(folder, "model.safetensors"))
        ids = np.array(ref["tokens"])
        T = len(ids)
        positions = np.tile(np.arange(T, dtype=np.float64), (3, 1))
        logits, hidden = text_forward(W, "model.", cfg, W["model.embed_tokens.weight"][ids],
                                      positions)
        rep.compare(f"{name} prefill logits", logits, load_raw(folder, ref, "prefill_logits"))
        rep.compare(f"{name} decode logits", logits, load_raw(folder, ref, "decode_logits"))
        rep.compare(f"{name} chunked logits", logits, load_raw(folder, ref, "chunked_logits"))
        rep.compare(f"{name} hidden states", hidden, load_raw(folder, ref, "hidden_states"))

    folder = os.path.join(data, "qwen35-tiny-vlm")
    cfg = json.load(open(os.path.join(folder, "config.json")))
    ref = json.load(open(os.path.join(folder, "ref.json")))
    W = load_safetensors(os.path.join(folder, "model.safetensors"))
    pixels = load_raw(folder, ref, "pixel_values").astype(np.float64)
    grid = ref["image_grid_thw"]
    stages, merged = vision_forward(W, cfg["vision_config"], pixels, grid)
    rep.compare("vlm vision stages", stages, load_raw(folder, ref, "vision_stages"))
    rep.compare("vlm image embeddings", merged, load_raw(folder, ref, "image_embeds"))
    ids = ref["input_ids"]
    m = cfg["vision_config"]["spatial_merge_size"]
    positions = mrope_positions(ids, cfg["image_token_id"], grid[1] // m, grid[2] // m)
    hf_pos = load_raw(folder, ref, "position_ids", "<i4")
    same = np.array_equal(positions, hf_pos)
    rep.failed |= not same
    print(f"{'ok  ' if same else 'FAIL'} vlm M-RoPE positions: README rule == HF's position ids")
    tcfg = cfg["text_config"]
    x = W["model.language_model.embed_tokens.weight"][np.array(ids)].copy()
    x[np.array(ids) == cfg["image_token_id"]] = merged
    logits, _ = text_forward(W, "model.language_model.", tcfg, x, positions)
    rep.compare("vlm logits (image in the prompt)", logits, load_raw(folder, ref, "logits"))
    rep.compare("vlm decode logits", logits, load_raw(folder, ref, "decode_logits"))
    sys.exit(1 if rep.failed else 0)


if __name__ == "__main__":
    main()
