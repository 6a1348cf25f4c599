# What the end-to-end scripts share, sourced by them: their help, their log
# lines, and one server in the background, started by the script (which
# sets server_pid), waited for with wait_for_server, and stopped on exit
# whatever happens.

# The repository, where the scripts run; the data directory; the Python
# that creates virtual environments.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
data_dir="${MEMORY_DATA_DIR:-$repo/../shared/data}"
base_python="${PYTHON:-python3}"

# usage: the script's help, its header comment.
usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; }

# log MESSAGE...: a line stamped with the script's name and the time.
log() { printf '[%s %s] %s\n' "$(basename "$0" .sh)" "$(date +%H:%M:%S)" "$*"; }

# elapsed START: seconds since START (a `date +%s`), as `12s`.
elapsed() { echo "$(($(date +%s) - $1))s"; }

# ensure_venv WHAT PIP_ARGS...: unless venv_works (the script's check of
# $venv) passes already, creates the virtual environment $venv anew and
# runs `pip install PIP_ARGS` in it; exits 1 when the check fails after.
ensure_venv() {
    local what="$1" t0
    shift
    if venv_works; then
        log "reusing $venv ($what)"
        return
    fi
    t0="$(date +%s)"
    log "creating $venv with $what"
    rm -rf "$venv"
    "$base_python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install "$@"
    if ! venv_works; then
        echo "$(basename "$0"): $what was installed into $venv but does not work" >&2
        exit 1
    fi
    log "venv ready in $(elapsed "$t0")"
}

server_pid=""

# stop_server: stops the server, if one runs, and waits for it.
stop_server() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$server_pid" 2>/dev/null || true
    fi
    if [[ -n "$server_pid" ]]; then
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for_server URL LOG WAIT_S: waits until URL answers; exits 1 with the
# end of LOG when the server exits first or WAIT_S seconds pass.
wait_for_server() {
    local url="$1" server_log="$2" wait_s="$3" deadline
    deadline=$(($(date +%s) + wait_s))
    until curl -fsS --max-time 5 "$url" >/dev/null 2>&1; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "$(basename "$0"): the server exited before answering; the end of $server_log:" >&2
            tail -n 30 "$server_log" >&2
            exit 1
        fi
        if (($(date +%s) >= deadline)); then
            echo "$(basename "$0"): the server did not answer $url within ${wait_s}s; the end of $server_log:" >&2
            tail -n 30 "$server_log" >&2
            exit 1
        fi
        sleep 0.5
    done
}

# free_port PYTHON: a free port on 127.0.0.1.
free_port() {
    "$1" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
