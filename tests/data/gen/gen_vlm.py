"""A tiny random Qwen3_5ForConditionalGeneration (vision + text) and its references.

From the committed PNG (128x96, no resize needed) through HF's image processor,
the vision tower and the language model with the image in the prompt:
  ref_pixel_values.f32     [n_patches, 3*2*16*16]  the processor's output
  ref_vision_stages.f32    [4, n_patches, vision_hidden]  patch embedding output,
                           block 0 input (= patch embedding + interpolated position
                           embedding), block 0 output, block 1 output
  ref_image_embeds.f32     [n_merged, out_hidden]  the merger's output (image tokens)
  ref_position_ids.i32     [R, T]  position ids HF passed to the language model
  ref_logits.f32           [T, V]  one forward over the whole prompt
  ref_decode_logits.f32    [T, V]  prefill of the first prefill_n tokens (with the
                           image), then one token at a time with HF's cache
"""
import inspect
import os
import shutil

import numpy as np
import torch

from common import (make_config, max_abs, max_abs_diff, randomize_, write_f32, write_i32,
                    write_json)
from gen_tokenizer import SPECIALS

NAME = "qwen35-tiny-vlm"
SEED = 3003
N_REGULAR = 512 - len(SPECIALS)
SPECIAL_ID = {s: N_REGULAR + i for i, s in enumerate(SPECIALS)}

TEXT_CONFIG = dict(
    vocab_size=512, hidden_size=64, intermediate_size=64, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=2, head_dim=32,
    linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
    linear_num_key_heads=2, linear_num_value_heads=2,
    layer_types=["linear_attention"] * 3 + ["full_attention"], full_attention_interval=4,
    rms_norm_eps=1e-6, tie_word_embeddings=True, max_position_embeddings=4096,
    # partial 0.5 of head_dim 32 -> 16 rotary dims = 8 frequencies = 3 + 3 + 2 sections
    rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.5,
                         mrope_section=[3, 3, 2], mrope_interleaved=True),
    partial_rotary_factor=0.5,  # else HF writes its BC default 0.25 at the top level
    hidden_act="silu", attention_bias=False)
VISION_CONFIG = dict(
    depth=2, hidden_size=32, hidden_act="gelu_pytorch_tanh", intermediate_size=64,
    num_heads=2, in_channels=3, patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
    out_hidden_size=64, num_position_embeddings=64)
MIN_PIXELS = 32 * 32
MAX_PIXELS = 1 << 24


def image_processor():
    import transformers
    cls = getattr(transformers, "Qwen2VLImageProcessor", None) or \
        getattr(transformers, "Qwen2VLImageProcessorFast")
    return cls(do_resize=True, size={"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS},
               patch_size=16, temporal_patch_size=2, merge_size=2,
               image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5],
               do_rescale=True, rescale_factor=1.0 / 255.0, do_normalize=True,
               do_convert_rgb=True)


def manual_patches(rgb, patch=16, temporal=2, merge=2):
    """Our own patchify of an HxWx3 uint8 image, in HF's layout, for the identity check."""
    x = (rgb.astype(np.float32) / 255.0 - 0.5) / 0.5          # H, W, C
    chw = np.transpose(x, (2, 0, 1))
    frames = np.stack([chw] * temporal, axis=0)                 # t, C, H, W
    c, h, w = chw.shape
    gh, gw = h // patch, w // patch
    p = frames.reshape(1, temporal, c, gh // merge, merge, patch, gw // merge, merge, patch)
    p = p.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return p.reshape(gh * gw, c * temporal * patch * patch), (1, gh, gw)


def prompt_ids(tok_dir, n_image_tokens):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tok_dir)
    text = ("<|im_start|>user\n<|vision_start|>" + "<|image_pad|>" * n_image_tokens +
            "<|vision_end|>Describe this image.<|im_end|>\n<|im_start|>assistant\n")
    ids = tok.encode(text, add_special_tokens=False)
    continuation = tok.encode("A bright disc.", add_special_tokens=False)
    return ids, continuation, text


def first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


def generate(out_root, tok_dir, png_path, log):
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor, Qwen3_5Config, Qwen3_5ForConditionalGeneration
    out_dir = os.path.join(out_root, NAME)
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(SEED)
    cfg = make_config(Qwen3_5Config, dict(
        text_config=dict(TEXT_CONFIG), vision_config=dict(VISION_CONFIG),
        image_token_id=SPECIAL_ID["<|image_pad|>"], video_token_id=SPECIAL_ID["<|video_pad|>"],
        vision_start_token_id=SPECIAL_ID["<|vision_start|>"],
        vision_end_token_id=SPECIAL_ID["<|vision_end|>"], tie_word_embeddings=True), log)
    model = Qwen3_5ForConditionalGeneration(cfg).to(torch.float32).eval()
    unknown = randomize_(model, SEED)
    if unknown:
        log(f"{NAME}: parameters left at HF init: {unknown}")
    model.save_pretrained(out_dir, safe_serialization=True)
    image_processor().save_pretrained(out_dir)
    for f in os.listdir(tok_dir):
        shutil.copy(os.path.join(tok_dir, f), out_dir)
    shutil.copy(png_path, out_dir)

    model = Qwen3_5ForConditionalGeneration.from_pretrained(
        out_dir, dtype=torch.float32, attn_implementation="eager").eval()
    proc = AutoImageProcessor.from_pretrained(out_dir)
    img = Image.open(png_path).convert("RGB")
    rgb = np.asarray(img)
    inputs = proc(images=[img], return_tensors="pt")
    pixel_values = inputs["pixel_values"].to(torch.float32)
    grid = inputs["image_grid_thw"]
    manual, manual_grid = manual_patches(rgb)
    pv_diff = float(np.abs(pixel_values.numpy() - manual).max())
    log(f"{NAME}: processor {type(proc).__name__} grid {grid.tolist()} (manual {manual_grid}) "
        f"pixel max|diff| vs manual patchify {pv_diff:.3g}")

    visual = model.model.visual
    stages = []
    hooks = [visual.patch_embed.register_forward_hook(lambda m, i, o: stages.append(first(o)))]
    hooks.append(visual.blocks[0].register_forward_pre_hook(
        lambda m, args, kwargs: stages.append(first(args) if args else kwargs["hidden_states"]),
        with_kwargs=True))
    for blk in visual.blocks:
        hooks.append(blk.register_forward_hook(lambda m, i, o: stages.append(first(o))))
    with torch.no_grad():
        vout = visual(pixel_values, grid_thw=grid)
    for h in hooks:
        h.remove()
    if hasattr(vout, "pooler_output"):
        embeds = vout.pooler_output
    else:
        embeds = first(vout)
    if isinstance(embeds, (tuple, list)):
        embeds = torch.cat(list(embeds), dim=0)
    stage_stack = torch.stack([s.detach().reshape(s.shape[-2], s.shape[-1]) for s in stages])

    n_merged = int(grid.prod()) // (VISION_CONFIG["spatial_merge_size"] ** 2)
    ids, continuation, text = prompt_ids(tok_dir, n_merged)
    prefill_n = len(ids)
    all_ids = ids + continuation
    input_ids = torch.tensor([all_ids], dtype=torch.long)
    kwargs = dict(pixel_values=pixel_values, image_grid_thw=grid)
    accepts_mm = "mm_token_type_ids" in inspect.signature(model.forward).parameters
    if accepts_mm:
        kwargs["mm_token_type_ids"] = (input_ids == cfg.image_token_id).to(torch.int32)

    captured = []

    def grab(_m, args, kw):
        pos = kw.get("position_ids")
        if pos is not None:
            captured.append(pos.detach().clone())

    lm = model.model.language_model
    h = lm.register_forward_pre_hook(grab, with_kwargs=True)
    with torch.no_grad():
        logits = model(input_ids=input_ids, use_cache=False, **kwargs).logits[0]
        full_pos = captured[-1] if captured else None
        # prefill the prompt (with the image), then teacher-force the continuation
        pre_kwargs = dict(kwargs)
        if accepts_mm:
            pre_kwargs["mm_token_type_ids"] = kwargs["mm_token_type_ids"][:, :prefill_n]
        model.model.rope_deltas = None
        out = model(input_ids=input_ids[:, :prefill_n], use_cache=True, **pre_kwargs)
        rows = [out.logits[0]]
        pkv = out.past_key_values
        for t in range(prefill_n, len(all_ids)):
            out = model(input_ids=input_ids[:, t:t + 1], past_key_values=pkv, use_cache=True)
            pkv = out.past_key_values
            rows.append(out.logits[0])
        decode = torch.cat(rows, dim=0)
        decode_pos = [p[..., -1].reshape(-1).tolist() for p in captured[2:]]
    h.remove()

    files = {}
    files["pixel_values"] = dict(file="ref_pixel_values.f32", shape=write_f32(
        os.path.join(out_dir, "ref_pixel_values.f32"), pixel_values))
    files["vision_stages"] = dict(file="ref_vision_stages.f32", shape=write_f32(
        os.path.join(out_dir, "ref_vision_stages.f32"), stage_stack),
        rows="patch_embed output, block 0 input (patch + position embedding), block 0 output,"
             " block 1 output; patches in the processor's order")
    files["image_embeds"] = dict(file="ref_image_embeds.f32", shape=write_f32(
        os.path.join(out_dir, "ref_image_embeds.f32"), embeds))
    if full_pos is not None:
        pos2d = full_pos.reshape(full_pos.shape[0], -1)
        files["position_ids"] = dict(file="ref_position_ids.i32", shape=write_i32(
            os.path.join(out_dir, "ref_position_ids.i32"), pos2d),
            rows="as passed to the language model: 4 rows = text, t, h, w; 3 rows = t, h, w")
    files["logits"] = dict(file="ref_logits.f32", shape=write_f32(
        os.path.join(out_dir, "ref_logits.f32"), logits))
    files["decode_logits"] = dict(file="ref_decode_logits.f32", prefill_n=prefill_n,
                                  shape=write_f32(os.path.join(out_dir, "ref_decode_logits.f32"),
                                                  decode))
    ref = {
        "generator": "tests/data/gen/gen_vlm.py",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "model_class": type(model).__name__, "image_processor_class": type(proc).__name__,
        "seed": SEED, "dtype": "float32", "device": "cpu", "attn_implementation": "eager",
        "image": os.path.basename(png_path), "image_size_wh": [img.width, img.height],
        "image_grid_thw": grid[0].tolist(), "n_patches": int(grid.prod()),
        "n_merged_tokens": n_merged,
        "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS,
        "pixel_values_layout": "row = one 16x16 patch in HF order (t, h/2, w/2, 2, 2 over the "
                               "patch grid); column = c*512 + t*256 + y*16 + x (c: RGB, t: "
                               "temporal copy 0/1); value = (v/255 - 0.5)/0.5",
        "pixel_values_max_abs_diff_vs_manual": pv_diff,
        "prompt_text": text, "continuation_text_ids": continuation,
        "input_ids": all_ids, "n_tokens": len(all_ids), "prefill_n": prefill_n,
        "image_token_id": cfg.image_token_id, "vision_start_token_id": cfg.vision_start_token_id,
        "vision_end_token_id": cfg.vision_end_token_id, "video_token_id": cfg.video_token_id,
        "mm_token_type_ids_passed": accepts_mm,
        "decode_step_positions": decode_pos,
        "files": files,
        "format": "raw little-endian (f32 / int32), C order, no header",
        "max_abs_image_embed": max_abs(embeds),
        "max_abs_logit": max_abs(logits),
        "max_abs_diff_decode_vs_prefill": max_abs_diff(decode, logits),
        "note": "vision MLP uses hidden_act (gelu tanh); the merger MLP uses nn.GELU() (erf)",
    }
    write_json(os.path.join(out_dir, "ref.json"), ref)
    log(f"{NAME}: grid {grid[0].tolist()} merged {n_merged} T {len(all_ids)} max|emb| "
        f"{ref['max_abs_image_embed']:.4f} max|logit| {ref['max_abs_logit']:.4f} decode-prefill "
        f"{ref['max_abs_diff_decode_vs_prefill']:.3g} positions {files.get('position_ids')}")
    return ref
