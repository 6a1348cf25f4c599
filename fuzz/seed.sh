#!/usr/bin/env bash
# Builds the seed corpus of every fuzz target under fuzz/corpus/<target>/:
# the committed regressions, the repository's test fixtures, and small pieces
# (a few messages each) cut from the real transcripts in $MEMORY_DATA_DIR
# (agent-trajectories/*.json, locomo/locomo-dev.json). Those pieces are made
# here, at run time, and never committed.
#
#   MEMORY_DATA_DIR=../shared/data fuzz/seed.sh
#
# Without MEMORY_DATA_DIR the corpus holds the regressions and fixtures only.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
corpus="$here/corpus"
fixtures="$root/crates/memory-cli/tests/fixtures"
targets=(input_chat input_locomo input_traj repair_trim wire serve_request serve_messages serve_responses)

for target in "${targets[@]}"; do
    mkdir -p "$corpus/$target"
    if [ -d "$here/regressions/$target" ]; then
        cp "$here/regressions/$target"/* "$corpus/$target/" 2>/dev/null || true
    fi
done
cp "$fixtures"/*.traj "$corpus/input_traj/"
cp "$fixtures"/locomo-*.json "$corpus/input_locomo/"
cp "$root"/crates/memory-serve/tests/fixtures/claude-code/request-*.json "$corpus/serve_messages/"
for fixture in "$fixtures"/*.traj "$fixtures"/*.json; do
    # repair_trim reads its budget from the first two bytes (80 tokens here).
    { printf 'P\0'; cat "$fixture"; } >"$corpus/repair_trim/fixture-$(basename "$fixture")"
done

data="${MEMORY_DATA_DIR:-}"
if [ -z "$data" ] || [ ! -d "$data" ]; then
    echo "seed.sh: MEMORY_DATA_DIR is not set or not a folder; seeded from the repository only" >&2
    exit 0
fi

python3 - "$data" "$corpus" "$fixtures" <<'PY'
import glob, json, os, struct, sys

data, corpus, fixtures = sys.argv[1:4]
TEXT = 240      # characters kept of each text
PIECE = 5       # messages per piece
PIECES = 40     # pieces per trajectory at most

written = {}

def write(target, payload):
    n = written.get(target, 0)
    written[target] = n + 1
    with open(os.path.join(corpus, target, f"data-{n:05}"), "wb") as f:
        f.write(payload)

def cut(value):
    """The value with every string cut to TEXT characters."""
    if isinstance(value, str):
        return value[:TEXT]
    if isinstance(value, list):
        return [cut(v) for v in value]
    if isinstance(value, dict):
        return {k: cut(v) for k, v in value.items()}
    return value

def compact(value):
    return json.dumps(value, separators=(",", ":")).encode()

# Chat trajectories: pieces as a JSON array, JSONL, a trajectory object and
# a SWE-agent `history`; reply bodies and message arrays for the wire;
# request bodies for the server's decoder; a budget prefix for repair_trim.
for path in sorted(glob.glob(os.path.join(data, "agent-trajectories", "*.json"))):
    for t, trajectory in enumerate(json.load(open(path))):
        messages = cut(trajectory.get("messages", []))
        starts = range(0, max(len(messages) - 1, 1), 2)
        for k, start in enumerate(list(starts)[:PIECES]):
            piece = messages[start:start + PIECE]
            if not piece:
                continue
            write("input_chat", compact(piece))
            write("input_chat", b"\n".join(compact(m) for m in piece) + b"\n")
            write("input_chat", compact([{"instance_id": f"t{t}", "messages": piece}]))
            history = [dict(m, message_type="observation" if m.get("role") != "assistant" else "action") for m in piece]
            write("input_traj", compact({"history": history, "trajectory": []}))
            steps = [{"thought": m.get("content") or "", "action": "ls", "observation": "ok"} for m in piece if m.get("role") == "assistant"]
            write("input_traj", compact({"trajectory": steps}))
            budget = struct.pack("<H", (37 * (k + 1) + 11 * t) % 600)
            write("repair_trim", budget + compact(piece))
            write("wire", compact(piece))
            write("serve_request", compact({"model": "m", "stream": k % 2 == 0, "max_tokens": 64 + k, "messages": piece}))
            for m in piece:
                if m.get("role") == "assistant":
                    reply = {"choices": [{"message": m, "finish_reason": "tool_calls" if m.get("tool_calls") else "stop"}],
                             "usage": {"prompt_tokens": 100 + k, "completion_tokens": 7}}
                    write("wire", compact(reply))

# LoCoMo: one sample per piece, two short sessions and the questions whose
# evidence falls in them.
locomo = os.path.join(data, "locomo", "locomo-dev.json")
if os.path.exists(locomo):
    for sample in json.load(open(locomo)):
        conversation = sample["conversation"]
        sessions = sorted(k for k in conversation if k.startswith("session_") and k.count("_") == 1)
        for k in range(0, len(sessions) - 1, 2):
            kept = sessions[k:k + 2]
            piece = {key: conversation[key] for key in ("speaker_a", "speaker_b")}
            ids = set()
            for s in kept:
                turns = cut(conversation[s][:PIECE])
                piece[s] = turns
                piece[s + "_date_time"] = conversation.get(s + "_date_time", "")
                ids.update(turn.get("dia_id") for turn in turns)
            qa = [q for q in sample.get("qa", []) if set(q.get("evidence", [])) & ids][:3]
            value = [{"sample_id": sample.get("sample_id"), "conversation": piece, "qa": cut(qa)}]
            write("input_locomo", json.dumps(value, indent=1).encode())
            write("repair_trim", struct.pack("<H", 40 + 13 * k) + compact(value))

for target, n in sorted(written.items()):
    print(f"seed.sh: {target}: {n} pieces from {data}")
PY
