# lib.sh: shared by the tmem serve tests (sourced). Needs TMEM and WORK.
# start_server NAME MODEL [ARGS...]: starts `tmem serve` on a free port;
# sets <NAME>_PID and <NAME>_URL. stop_servers at exit kills what it started.
SERVER_PIDS=()
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
stop_servers() {
  local p
  for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
trap stop_servers EXIT
start_server() {
  local name="$1"; shift
  local out="$WORK/$name.out"
  "$TMEM" serve "$@" --port 0 >"$out" 2>&1 &
  local pid=$!
  SERVER_PIDS+=("$pid")
  local port="" i
  for i in $(seq 1 200); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$out" 2>/dev/null | grep -o '[0-9]*$' || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$out"; fail "tmem serve $name exited"; }
    sleep 0.05
  done
  [ -n "$port" ] || { cat "$out"; fail "tmem serve $name did not start"; }
  printf -v "${name}_PID" '%s' "$pid"
  printf -v "${name}_URL" 'http://127.0.0.1:%s' "$port"
}
need_serve() {
  if "$TMEM" serve 2>&1 | grep -q "built without libmicrohttpd"; then
    skip "tmem was built without libmicrohttpd (apt-get install libmicrohttpd-dev)"
  fi
}
# make_models: the converted tiny checkpoint A (real tokenizer, ChatML) and a
# generated model big enough that a long generation outlasts a disconnect.
make_models() {
  [ -f "$WORK/tiny.gguf" ] || "$TMEM" convert "$SRC/tests/data/qwen35-tiny-a" "$WORK/tiny.gguf" >/dev/null
  [ -f "$WORK/mid.gguf" ] || "$TMEM" gen --preset tiny --layers 4 --embd 512 --ff 2048 --vocab 8192 \
    "$WORK/mid.gguf" >/dev/null 2>&1
}
# metric URL NAME: the value of one Prometheus line
metric() { curl -s "$1/metrics" -H "Authorization: Bearer ${API_KEY:-}" | awk -v n="$2" '$1 == n {print $2}'; }
