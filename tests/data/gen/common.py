"""Helpers shared by the reference-data generators (run on the device machine).

Raw outputs are little-endian, C-order, no header: the shape lives in the JSON
next to them. Weights get a deterministic random init with a plausible scale
(see randomize_), so that every formula of the forward pass is exercised:
the (1 + w) RMSNorm, the gated norm, the DeltaNet decay from A_log / dt_bias,
biases of the vision tower.
"""
import json
import math
import os

import numpy as np
import torch


def setup_determinism():
    """f32 everywhere, no TF32, one CPU thread, deterministic kernels."""
    torch.set_default_dtype(torch.float32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def write_raw(path, tensor, dtype):
    """Writes tensor as raw little-endian dtype ('<f4' or '<i4'); returns its shape."""
    arr = tensor.detach().cpu().numpy() if torch.is_tensor(tensor) else np.asarray(tensor)
    arr = np.ascontiguousarray(arr.astype(dtype))
    arr.tofile(path)
    return list(arr.shape)


def write_f32(path, tensor):
    return write_raw(path, tensor, "<f4")


def write_i32(path, tensor):
    return write_raw(path, tensor, "<i4")


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False, sort_keys=False)
        f.write("\n")


def max_abs(t):
    return float(t.detach().abs().max())


def max_abs_diff(a, b):
    return float((a.detach() - b.detach()).abs().max())


def _uniform(shape, lo, hi, gen):
    return torch.rand(shape, generator=gen) * (hi - lo) + lo


def _normal(shape, std, gen):
    return torch.randn(shape, generator=gen) * std


@torch.no_grad()
def randomize_(model, seed, embed_std=0.5):
    """Deterministic plausible-scale init of every parameter; returns the rules used.

    Linear / conv weights: N(0, 1/fan_in); biases N(0, 0.05^2).
    Qwen3_5RMSNorm (output = norm(x) * (1 + w)): w ~ U(-0.3, 0.3).
    Qwen3_5RMSNormGated (output = norm(x) * w * silu(z)): w ~ U(0.6, 1.4).
    LayerNorm: w ~ 1 + U(-0.2, 0.2), b ~ N(0, 0.05^2).
    Embeddings: N(0, embed_std^2).
    GatedDeltaNet: A_log = log(U(0.05, 1.5)), dt_bias ~ U(-1.5, 1.0), so the
    per-step decay exp(-exp(A_log) * softplus(a + dt_bias)) spans ~0.05..0.998.
    Tied parameters are initialised once.
    """
    gen = torch.Generator().manual_seed(seed)
    seen = set()
    unknown = []
    for mod_name, mod in model.named_modules():
        cls = type(mod).__name__
        for pname, p in mod.named_parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            full = f"{mod_name}.{pname}" if mod_name else pname
            shape = p.shape
            if cls.endswith("RMSNormGated"):
                val = _uniform(shape, 0.6, 1.4, gen)
            elif cls.endswith("RMSNorm"):
                val = _uniform(shape, -0.3, 0.3, gen)
            elif cls == "LayerNorm":
                val = (1.0 + _uniform(shape, -0.2, 0.2, gen)) if pname == "weight" \
                    else _normal(shape, 0.05, gen)
            elif cls == "Embedding":
                val = _normal(shape, embed_std, gen)
            elif cls.endswith("GatedDeltaNet") and pname == "A_log":
                val = torch.log(_uniform(shape, 0.05, 1.5, gen))
            elif cls.endswith("GatedDeltaNet") and pname == "dt_bias":
                val = _uniform(shape, -1.5, 1.0, gen)
            elif pname == "bias":
                val = _normal(shape, 0.05, gen)
            elif pname == "weight" and p.ndim >= 2:
                fan_in = p[0].numel()
                val = _normal(shape, 1.0 / math.sqrt(fan_in), gen)
            else:
                unknown.append(full)
                continue
            p.copy_(val.to(p.dtype))
    return unknown


def rmsnorm_form(norm_module):
    """Returns '1+w' or 'w': which scale form a Qwen3_5RMSNorm instance applies."""
    eps = getattr(norm_module, "eps", getattr(norm_module, "variance_epsilon", 1e-6))
    with torch.no_grad():
        x = torch.linspace(-1.0, 2.0, norm_module.weight.numel()).reshape(1, -1)
        y = norm_module(x)
        xn = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        w = norm_module.weight.float()
        if torch.allclose(y, xn * (1.0 + w), atol=1e-6):
            return "1+w"
        if torch.allclose(y, xn * w, atol=1e-6):
            return "w"
        return "unknown"


def make_config(cls, kwargs, log):
    """cls(**kwargs); if this transformers rejects full_attention_interval next to
    layer_types, retries without it (layer_types is what the model uses)."""
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as err:
        log(f"{cls.__name__}: {err}; retrying without full_attention_interval")
        kw = {k: v for k, v in kwargs.items() if k != "full_attention_interval"}
        for key in ("text_config",):
            if isinstance(kw.get(key), dict):
                kw[key] = {k: v for k, v in kw[key].items() if k != "full_attention_interval"}
        return cls(**kw)


def dir_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total
