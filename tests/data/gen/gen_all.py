#!/usr/bin/env python3
"""Generates everything under tests/data/ that needs torch / transformers / tokenizers.

Run on a machine with torch + transformers (here: the device machine, CPU only):
  python3 gen_all.py --out OUT_DIR --src tests/data [--llamacpp LLAMACPP_DIR]
OUT_DIR then holds tokenizer/, tokenizer_ref.json, qwen35-tiny-a/, qwen35-tiny-b/,
qwen35-tiny-vlm/, llamacpp/ (when --llamacpp is given) and gen_log.txt; copy it
over tests/data/. Each step is independent: a failing step is logged and the
others still run.
"""
import argparse
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402

LOG_LINES = []


def log(msg):
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    LOG_LINES.append(line)


def step(name, fn, *args):
    t0 = time.time()
    try:
        res = fn(*args)
        log(f"step {name}: ok ({time.time() - t0:.1f} s)")
        return res
    except Exception:
        log(f"step {name}: FAILED\n{traceback.format_exc()}")
        return None


def probe():
    import tokenizers
    import torch
    import transformers
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers "
        f"{transformers.__version__} tokenizers {tokenizers.__version__}")
    names = [n for n in dir(transformers) if "Qwen3_5" in n or n.startswith("Qwen2VLImage")]
    log("transformers Qwen3_5 names: " + ", ".join(names))


def llamacpp_convert(llama_dir, out_root):
    out_dir = os.path.join(out_root, "llamacpp")
    os.makedirs(out_dir, exist_ok=True)
    wrapper = os.path.join(HERE, "run_llamacpp_convert.py")
    jobs = [
        ("qwen35-tiny-a", "f32", "qwen35-tiny-a-f32.gguf", []),
        ("qwen35-tiny-a", "f16", "qwen35-tiny-a-f16.gguf", []),
        ("qwen35-tiny-a", "q8_0", "qwen35-tiny-a-q8_0.gguf", []),
        ("qwen35-tiny-b", "f16", "qwen35-tiny-b-f16.gguf", []),
        ("qwen35-tiny-vlm", "f16", "qwen35-tiny-vlm-text-f16.gguf", []),
        ("qwen35-tiny-vlm", "f32", "mmproj-qwen35-tiny-vlm-f32.gguf", ["--mmproj"]),
    ]
    made = []
    for model, outtype, fname, extra in jobs:
        target = os.path.join(out_dir, fname)
        # --no-mtp: our checkpoints have no multi-token-prediction head (real Qwen3.5
        # ones do); without it the converter asserts on the missing mtp_num_hidden_layers.
        no_mtp = [] if "--mmproj" in extra else ["--no-mtp"]
        cmd = [sys.executable, wrapper, llama_dir, os.path.join(out_root, model),
               "--outtype", outtype, "--outfile", target] + no_mtp + extra
        t0 = time.time()
        res = subprocess.run(cmd, capture_output=True, text=True)
        tail = (res.stdout + res.stderr)[-3000:]
        if res.returncode != 0 or not os.path.exists(target):
            log(f"llama.cpp convert {fname}: FAILED rc {res.returncode}\n{tail}")
            continue
        log(f"llama.cpp convert {fname}: ok {os.path.getsize(target)} bytes "
            f"({time.time() - t0:.1f} s)")
        made.append(target)
    if made:
        res = subprocess.run([sys.executable, os.path.join(HERE, "dump_gguf_manifest.py"),
                              llama_dir, os.path.join(out_dir, "manifest.json")] + made,
                             capture_output=True, text=True)
        log(f"manifest: rc {res.returncode} {(res.stdout + res.stderr)[-2000:]}")
    return made


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--src", required=True, help="tests/data (for gen/ corpus and images/)")
    ap.add_argument("--llamacpp", default=None)
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    common.setup_determinism()
    step("probe", probe)

    import gen_text
    import gen_tokenizer
    import gen_vlm
    tok_dir = os.path.join(out, "tokenizer")
    corpus = os.path.join(args.src, "gen", "tokenizer_corpus.txt")
    tok = step("tokenizer", gen_tokenizer.build, corpus)
    if tok is not None:
        step("tokenizer save", gen_tokenizer.save, tok, tok_dir)
        step("tokenizer ref", gen_tokenizer.reference, tok_dir,
             os.path.join(out, "tokenizer_ref.json"))
    for name, spec in gen_text.CONFIGS.items():
        step(name, gen_text.generate, name, spec, out, tok_dir, log)
    png = os.path.join(args.src, "images", "rgb_128x96.png")
    step(gen_vlm.NAME, gen_vlm.generate, out, tok_dir, png, log)
    if args.llamacpp:
        step("llama.cpp convert", llamacpp_convert, os.path.abspath(args.llamacpp), out)
    for root, _, files in sorted(os.walk(out)):
        for f in sorted(files):
            p = os.path.join(root, f)
            log(f"  {os.path.relpath(p, out)}  {os.path.getsize(p)}")
    log(f"total {common.dir_size(out)} bytes")
    with open(os.path.join(out, "gen_log.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(LOG_LINES) + "\n")


if __name__ == "__main__":
    main()
