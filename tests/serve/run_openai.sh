#!/usr/bin/env bash
# run_openai.sh TMEM WORKDIR SRCDIR: openai_check.mjs (the npm package
# `openai`) against two tmem serve instances with an API key. Exit 77
# (skip) without node, the package (cd tests/serve && npm install) or
# libmicrohttpd.
set -euo pipefail
TMEM="$1"; WORK="$2"; SRC="$3"
mkdir -p "$WORK"
. "$SRC/tests/serve/lib.sh"
here="$SRC/tests/serve"
command -v node >/dev/null 2>&1 || skip "node not found (the check needs Node.js and the npm package openai)"
[ -d "$here/node_modules/openai" ] || skip "the npm package openai is not installed: cd tests/serve && npm install"
need_serve
make_models
API_KEY=sk-tmem-test
want=$("$TMEM" run "$WORK/tiny.gguf" -p "Hello there" --chat -n 8 2>/dev/null | head -n 1)
start_server T "$WORK/tiny.gguf" --parallel 2 --ctx 512 --api-key "$API_KEY"
start_server M "$WORK/mid.gguf" --parallel 1 --ctx 4096 --api-key "$API_KEY"
node "$here/openai_check.mjs" "$T_URL" "$M_URL" "$want"
