#!/usr/bin/env python3
"""Runs llama.cpp's convert_hf_to_gguf.py (not ours, never committed) on a tiny checkpoint.

Usage: run_llamacpp_convert.py LLAMACPP_DIR HF_DIR --outtype f32 --outfile OUT.gguf [--mmproj]

LLAMACPP_DIR holds convert_hf_to_gguf.py, conversion/ and gguf-py/ exported from a
llama.cpp snapshot. One change is made at run time: the converter identifies a
BPE pre-tokenizer by hashing the encoding of a fixed text, and our synthetic
tokenizer's hash is in no table, so TextModel.get_vocab_base_pre is made to
answer "qwen35" (the pre-tokenizer our tokenizer.json does use). Nothing else
of the converter is touched.
"""
import os
import sys


def main():
    llama_dir = os.path.abspath(sys.argv[1])
    sys.path.insert(0, os.path.join(llama_dir, "gguf-py"))
    sys.path.insert(0, llama_dir)
    import conversion.base as base

    def qwen35_pre(self, tokenizer):
        return "qwen35"

    base.TextModel.get_vocab_base_pre = qwen35_pre
    import convert_hf_to_gguf
    sys.argv = [os.path.join(llama_dir, "convert_hf_to_gguf.py")] + sys.argv[2:]
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main()
