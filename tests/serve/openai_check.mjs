// openai_check.mjs TINY_URL MID_URL WANT_TEXT: tmem serve against OpenAI's
// official client library (npm `openai`): models, chat (greedy text = tmem
// run --chat's), streaming (same text), completions, an invalid request
// (BadRequestError 400 with the error object), and a stream the client
// aborts after its first chunk (the server frees that session at once).
import OpenAI from "openai";

const [tinyUrl, midUrl, want] = process.argv.slice(2);
const key = "sk-tmem-test";
const tiny = new OpenAI({ baseURL: tinyUrl + "/v1", apiKey: key, maxRetries: 0 });
const mid = new OpenAI({ baseURL: midUrl + "/v1", apiKey: key, maxRetries: 0 });
let failed = 0;
function check(ok, what) {
  console.log((ok ? "ok   " : "FAIL ") + what);
  if (!ok) failed++;
}

const models = await tiny.models.list();
check(models.data.length === 1 && models.data[0].id === "tiny.gguf", "models.list: " + models.data.map((m) => m.id));

const ask = { model: "tiny.gguf", messages: [{ role: "user", content: "Hello there" }], max_tokens: 8, temperature: 0 };
const chat = await tiny.chat.completions.create(ask);
const text = chat.choices[0].message.content;
check(text === want, `chat: '${text}' (tmem run --chat: '${want}')`);
check(chat.usage.completion_tokens === 8 && chat.choices[0].finish_reason === "length", "chat: usage and finish_reason");

const stream = await tiny.chat.completions.create({ ...ask, stream: true });
let streamed = "", finish = null, chunks = 0;
for await (const c of stream) {
  chunks++;
  streamed += c.choices[0].delta.content ?? "";
  finish = c.choices[0].finish_reason ?? finish;
}
check(streamed === text && finish === "length", `stream: ${chunks} chunks, '${streamed}', finish ${finish}`);

const cmpl = await tiny.completions.create({ model: "tiny.gguf", prompt: "Once upon", max_tokens: 5, temperature: 0 });
check(cmpl.object === "text_completion" && cmpl.usage.completion_tokens === 5, "completions: " + JSON.stringify(cmpl.choices[0].text));

try {
  await tiny.chat.completions.create({ model: "tiny.gguf", messages: [] });
  check(false, "invalid request accepted");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.error?.type === "invalid_request_error",
        `invalid request: ${e.status} ${e.error?.type}: ${e.error?.message}`);
}

async function metric(name) {
  const r = await fetch(midUrl + "/metrics", { headers: { Authorization: "Bearer " + key } });
  const line = (await r.text()).split("\n").find((l) => l.startsWith(name + " "));
  return line ? Number(line.split(" ")[1]) : NaN;
}
const long = await mid.chat.completions.create({
  model: "mid", messages: [{ role: "user", content: "go on" }], max_tokens: 4000, stream: true,
  ignore_eos: true, // llama.cpp's extension, sent as is
});
for await (const c of long) {
  if (c.choices[0].delta.content !== undefined) break; // the first token: leave
}
long.controller.abort();
let freed = false;
for (let i = 0; i < 100 && !freed; i++) {
  freed = (await metric("tmem_http_disconnects_total")) === 1 && (await metric('tmem_sessions{state="active"}')) === 0 &&
          (await metric('tmem_role_bytes{role="kv_cache"}')) === 0;
  if (!freed) await new Promise((r) => setTimeout(r, 50));
}
check(freed, "abort mid-stream: the session and its KV memory freed");
if (failed) {
  console.log(`${failed} check(s) failed`);
  process.exit(1);
}
console.log("serve/openai_npm: all checks passed");
