#!/usr/bin/env bash
# run_curl.sh TMEM WORKDIR SRCDIR: tmem serve against curl (docs/serve.md):
# routes, the chat template (greedy text = tmem run --chat's), SSE streaming
# (= the non-streamed text), completions, invalid requests, limits, the API
# key, over capacity (429 + Retry-After) and a disconnect mid-stream (its
# session and KV memory freed at once). Exit 77 (skip) without curl or
# without libmicrohttpd.
set -euo pipefail
TMEM="$1"; WORK="$2"; SRC="$3"
mkdir -p "$WORK"
. "$SRC/tests/serve/lib.sh"
command -v curl >/dev/null 2>&1 || skip "curl not found"
command -v python3 >/dev/null 2>&1 || skip "python3 not found (reads the JSON answers)"
need_serve
make_models
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
code() { curl -s -o "$WORK/body" -w '%{http_code}' "$@"; }

start_server A "$WORK/tiny.gguf" --parallel 2 --ctx 512 --max-body 4096
[ "$(curl -s "$A_URL/health")" = '{"status":"ok"}' ] || fail "/health"
curl -s "$A_URL/v1/models" | json 'd["data"][0]["id"]' | grep -qx tiny.gguf || fail "/v1/models"

# chat: the template is tmem run --chat's, the greedy text the same
want=$("$TMEM" run "$WORK/tiny.gguf" -p "Hello there" --chat -n 8 2>/dev/null | head -n 1)
body='{"model":"tiny","messages":[{"role":"user","content":"Hello there"}],"max_tokens":8,"temperature":0}'
[ "$(code "$A_URL/v1/chat/completions" -d "$body")" = 200 ] || fail "chat: $(cat "$WORK/body")"
got=$(json 'd["choices"][0]["message"]["content"]' < "$WORK/body")
[ "$got" = "$want" ] || fail "chat text '$got', tmem run --chat gives '$want'"
json 'd["object"], d["usage"]["completion_tokens"], d["choices"][0]["finish_reason"]' < "$WORK/body" |
  grep -qx "chat.completion 8 length" || fail "chat fields: $(cat "$WORK/body")"
echo "chat: '$got' (= tmem run --chat)"

# streaming: the chunks' deltas make the same text, then [DONE]
curl -sN "$A_URL/v1/chat/completions" -d "${body%\}},\"stream\":true}" > "$WORK/sse"
tail -n 2 "$WORK/sse" | head -n 1 | grep -qx 'data: \[DONE\]' || fail "stream does not end with [DONE]"
streamed=$(grep '^data: {' "$WORK/sse" | sed 's/^data: //' |
  python3 -c "import json,sys; print(''.join(json.loads(l)['choices'][0]['delta'].get('content','') for l in sys.stdin))")
[ "$streamed" = "$want" ] || fail "streamed text '$streamed' != '$want'"
grep '^data: {' "$WORK/sse" | tail -n 1 | grep -q '"finish_reason":"length"' || fail "no finish_reason chunk"
echo "stream: $(grep -c '^data: {' "$WORK/sse") chunks, same text, [DONE]"

# completions
[ "$(code "$A_URL/v1/completions" -d '{"prompt":"Once upon","max_tokens":5,"temperature":0}')" = 200 ] ||
  fail "completions: $(cat "$WORK/body")"
json 'd["object"], d["usage"]["completion_tokens"]' < "$WORK/body" | grep -qx "text_completion 5" ||
  fail "completion fields: $(cat "$WORK/body")"

# invalid requests: status and an OpenAI error object
bad() {
  local want="$1" what="$2"; shift 2
  local c; c=$(code "$@")
  [ "$c" = "$want" ] || fail "$what: HTTP $c, want $want ($(cat "$WORK/body"))"
  json 'd["error"]["type"]' < "$WORK/body" >/dev/null || fail "$what: no error object: $(cat "$WORK/body")"
}
C="$A_URL/v1/chat/completions"
bad 400 "malformed JSON" "$C" -d '{"messages":[}'
bad 400 "trailing comma" "$C" -d '{"messages":[{"role":"user","content":"x"}],}'
bad 400 "no messages" "$C" -d '{"max_tokens":3}'
bad 400 "empty messages" "$C" -d '{"messages":[]}'
bad 400 "bad role" "$C" -d '{"messages":[{"role":"wizard","content":"x"}]}'
bad 400 "n > 1" "$C" -d '{"messages":[{"role":"user","content":"x"}],"n":2}'
bad 400 "stream not a bool" "$C" -d '{"messages":[{"role":"user","content":"x"}],"stream":"yes"}'
bad 400 "huge max_tokens" "$C" -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":1000000000}'
bad 400 "max_tokens past the context" "$C" -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":510}'
bad 400 "image without --mmproj" "$C" \
  -d '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}'
printf '{"messages":[{"role":"user","content":"\xff\xfe"}]}' > "$WORK/badutf8"
bad 400 "invalid UTF-8" "$C" --data-binary @"$WORK/badutf8"
head -c 5000 /dev/zero | tr '\0' 'a' > "$WORK/big"
bad 413 "body over --max-body" "$C" --data-binary @"$WORK/big"
bad 404 "unknown route" "$A_URL/v2/nothing"
bad 405 "GET on a POST route" "$C"
json 'd["error"]["param"]' < <(curl -s "$C" -d '{"messages":[{"role":"user","content":"x"}],"n":2}') | grep -qx n ||
  fail "the n error names its param"
[ "$(code "$C" -d '{"messages":[{"role":"user","content":"unknown fields are ignored"}],"max_tokens":2,"frobnicate":1}')" = 200 ] ||
  fail "unknown field: $(cat "$WORK/body")"
echo "invalid requests: 400/404/405/413 with error objects"

# the metrics: bytes per role, budget, sessions, suspends, resumes
curl -s "$A_URL/metrics" > "$WORK/metrics"
for m in 'tmem_role_bytes{role="weights"}' 'tmem_role_bytes{role="kv_cache"}' tmem_budget_bytes tmem_dirty_bytes \
         'tmem_sessions{state="active"}' 'tmem_sessions{state="suspended"}' tmem_suspends_total tmem_resumes_total \
         tmem_http_requests_total; do
  grep -q "^$m [0-9]" "$WORK/metrics" || fail "/metrics has no $m"
done
echo "metrics: $(grep -vc '^#' "$WORK/metrics") series"

# the API key
start_server K "$WORK/tiny.gguf" --api-key sekrit
[ "$(code "$K_URL/v1/models")" = 401 ] || fail "no key: not 401"
[ "$(code "$K_URL/v1/models" -H 'Authorization: Bearer wrong')" = 401 ] || fail "wrong key: not 401"
[ "$(code "$K_URL/v1/models" -H 'Authorization: Bearer sekrit')" = 200 ] || fail "right key refused"
[ "$(code "$K_URL/health")" = 200 ] || fail "/health needs no key"
echo "api key: 401 without it"

# over capacity, then a disconnect mid-stream
start_server B "$WORK/mid.gguf" --parallel 1 --ctx 4096
long='{"messages":[{"role":"user","content":"go on"}],"max_tokens":4000,"ignore_eos":true,"stream":true}'
curl -sN "$B_URL/v1/chat/completions" -d "$long" > "$WORK/long.sse" &
client=$!
for i in $(seq 1 100); do [ -s "$WORK/long.sse" ] && break; sleep 0.05; done
[ -s "$WORK/long.sse" ] || fail "the long stream sent nothing"
hdr=$(curl -s -D - -o "$WORK/body" "$B_URL/v1/completions" -d '{"prompt":"x","max_tokens":2}')
echo "$hdr" | head -n 1 | grep -q ' 429' || fail "over capacity: $(echo "$hdr" | head -n 1)"
echo "$hdr" | grep -qi '^Retry-After: [0-9]' || fail "429 without Retry-After"
[ "$(metric "$B_URL" 'tmem_sessions{state="active"}')" = 1 ] || fail "the long stream holds no session"
kill "$client"; wait "$client" 2>/dev/null || true
for i in $(seq 1 100); do
  [ "$(metric "$B_URL" tmem_http_disconnects_total)" = 1 ] && [ "$(metric "$B_URL" 'tmem_sessions{state="active"}')" = 0 ] && break
  sleep 0.05
done
[ "$(metric "$B_URL" tmem_http_disconnects_total)" = 1 ] || fail "the disconnect was not seen"
[ "$(metric "$B_URL" 'tmem_sessions{state="active"}')" = 0 ] || fail "the session outlived its client"
[ "$(metric "$B_URL" 'tmem_role_bytes{role="kv_cache"}')" = 0 ] || fail "KV memory kept after the disconnect"
[ "$(metric "$B_URL" 'tmem_role_bytes{role="recurrent_state"}')" = 0 ] || fail "state memory kept after the disconnect"
[ "$(code "$B_URL/v1/completions" -d '{"prompt":"x","max_tokens":2}')" = 200 ] || fail "no room after the disconnect"
echo "capacity: 429 + Retry-After; disconnect mid-stream: session and KV freed in $((i * 50)) ms or less"
echo "serve/curl: all checks passed"
