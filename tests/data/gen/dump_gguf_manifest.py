#!/usr/bin/env python3
"""Lists every key and tensor of GGUF files (read with llama.cpp's gguf-py) as JSON.

Usage: dump_gguf_manifest.py LLAMACPP_DIR OUT.json FILE.gguf...
Tensor shapes are in GGUF order: ne[0] first (the contiguous dimension).
Arrays longer than 16 entries are given as their length and first 4 entries.
"""
import json
import os
import sys


def field_value(field, gguf):
    types = field.types
    if not types:
        return None
    if types[0] == gguf.GGUFValueType.ARRAY:
        sub = types[-1]
        items = []
        for idx in field.data:
            part = field.parts[idx]
            items.append(bytes(part).decode("utf-8", "replace") if sub == gguf.GGUFValueType.STRING
                         else part.tolist()[0])
        if len(items) > 16:
            return {"array_len": len(items), "first": items[:4]}
        return items
    part = field.parts[field.data[0]]
    if types[0] == gguf.GGUFValueType.STRING:
        return bytes(part).decode("utf-8", "replace")
    return part.tolist()[0]


def main():
    llama_dir = os.path.abspath(sys.argv[1])
    sys.path.insert(0, os.path.join(llama_dir, "gguf-py"))
    import gguf
    out = {}
    for path in sys.argv[3:]:
        reader = gguf.GGUFReader(path)
        kv = {}
        for name, field in reader.fields.items():
            if name.startswith("GGUF."):
                continue
            kv[name] = {"type": field.types[0].name if field.types else None,
                        "value": field_value(field, gguf)}
        tensors = [{"name": t.name, "type": t.tensor_type.name,
                    "ne": [int(d) for d in t.shape], "offset": int(t.data_offset)}
                   for t in reader.tensors]
        out[os.path.basename(path)] = {"size": os.path.getsize(path), "kv": kv,
                                       "tensors": tensors}
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
