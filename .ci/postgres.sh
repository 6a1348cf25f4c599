# Starts a throwaway PostgreSQL server for the tests that need one and
# exports MEMORY_POSTGRES_URL; the server and its data go away when the
# shell that sourced this file exits.
#
#     source .ci/postgres.sh        # from the repository root
#     cargo test -p memory-postgres
#
# Sourced by .ci/run. Installs Debian's postgresql package when no server
# binaries are found (as root). When MEMORY_POSTGRES_URL is already set, it
# is used as it is and nothing is started. A developer who wants the server
# gone before the shell exits calls `memory_postgres_stop`.
#
# The server listens on 127.0.0.1 only, on a free port, with password
# authentication for a user `memory` whose password is made up here. It
# accepts TLS (ssl=on) and plain connections alike: a certificate authority
# made up here signs the server's certificate (for localhost and
# 127.0.0.1), and MEMORY_POSTGRES_CA names the authority's certificate for
# the tests of sslmode=verify-full. Making them needs openssl; it is
# installed like the server when missing.

memory_postgres_bin() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

memory_postgres_free_port() {
    local port
    for port in $(seq 54329 54429); do
        # A refused connection means nobody listens there.
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

memory_postgres_stop() {
    if [ -n "${MEMORY_POSTGRES_DIR:-}" ] && [ -d "$MEMORY_POSTGRES_DIR" ]; then
        ${MEMORY_POSTGRES_AS:-} "$MEMORY_POSTGRES_BIN/pg_ctl" -D "$MEMORY_POSTGRES_DIR/data" \
            -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$MEMORY_POSTGRES_DIR"
        echo "postgres: stopped the test server"
    fi
    MEMORY_POSTGRES_DIR=
}

# Writes a certificate authority and a server certificate it signs, for
# localhost and 127.0.0.1, into the folder $1: ca.crt, server.crt and
# server.key. Both expire in two days.
memory_postgres_certificates() {
    local dir="$1"
    cat >"$dir/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = memory test server
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    (
        cd "$dir" &&
            openssl req -x509 -config openssl.cnf -extensions ca -days 2 -nodes \
                -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout ca.key -out ca.crt \
                -subj "/CN=memory test certificate authority" &&
            openssl req -new -config openssl.cnf -nodes \
                -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout server.key -out server.csr \
                -subj "/CN=localhost" &&
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 2 -extfile openssl.cnf -extensions server -out server.crt &&
            chmod 600 server.key &&
            rm -f ca.key ca.srl server.csr openssl.cnf
    ) >"$dir/openssl.log" 2>&1 || {
        cat "$dir/openssl.log" >&2
        return 1
    }
}

memory_postgres_start() {
    if [ -n "${MEMORY_POSTGRES_URL:-}" ]; then
        echo "postgres: using the MEMORY_POSTGRES_URL from the environment"
        return 0
    fi
    MEMORY_POSTGRES_BIN="$(memory_postgres_bin)" || {
        if [ "$(id -u)" -ne 0 ]; then
            echo "postgres: no server binaries and not root: install Debian's postgresql package" >&2
            return 1
        fi
        echo "postgres: installing Debian's postgresql package"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq postgresql >/dev/null
        MEMORY_POSTGRES_BIN="$(memory_postgres_bin)" || {
            echo "postgres: initdb and pg_ctl not found after installing postgresql" >&2
            return 1
        }
    }

    # Under /tmp, which the server's user can reach whoever sources this.
    MEMORY_POSTGRES_DIR="$(mktemp -d /tmp/memory-postgres.XXXXXX)"
    MEMORY_POSTGRES_AS=
    if [ "$(id -u)" -eq 0 ]; then
        # PostgreSQL refuses to run as root.
        id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        chown postgres "$MEMORY_POSTGRES_DIR"
        MEMORY_POSTGRES_AS="runuser -u postgres --"
    fi
    trap memory_postgres_stop EXIT

    local password port
    password="pw$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
    port="$(memory_postgres_free_port)" || {
        echo "postgres: no free port in 54329-54429" >&2
        return 1
    }
    (umask 077 && printf '%s\n' "$password" >"$MEMORY_POSTGRES_DIR/pwfile")
    [ -z "$MEMORY_POSTGRES_AS" ] || chown postgres "$MEMORY_POSTGRES_DIR/pwfile"

    $MEMORY_POSTGRES_AS "$MEMORY_POSTGRES_BIN/initdb" -D "$MEMORY_POSTGRES_DIR/data" \
        -U memory --pwfile="$MEMORY_POSTGRES_DIR/pwfile" -A scram-sha-256 \
        -E UTF8 --no-locale --no-sync >"$MEMORY_POSTGRES_DIR/initdb.log" 2>&1 || {
        cat "$MEMORY_POSTGRES_DIR/initdb.log" >&2
        return 1
    }
    rm -f "$MEMORY_POSTGRES_DIR/pwfile"

    if ! command -v openssl >/dev/null 2>&1; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "postgres: openssl is missing and not root: install Debian's openssl package" >&2
            return 1
        fi
        echo "postgres: installing Debian's openssl package"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq openssl >/dev/null
    fi
    local tls="$MEMORY_POSTGRES_DIR/tls"
    mkdir "$tls"
    memory_postgres_certificates "$tls" || return 1
    [ -z "$MEMORY_POSTGRES_AS" ] || chown -R postgres "$tls"
    $MEMORY_POSTGRES_AS "$MEMORY_POSTGRES_BIN/pg_ctl" -D "$MEMORY_POSTGRES_DIR/data" \
        -l "$MEMORY_POSTGRES_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $MEMORY_POSTGRES_DIR -c max_connections=200 \
            -c ssl=on -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key" \
        start >/dev/null || {
        cat "$MEMORY_POSTGRES_DIR/server.log" >&2
        return 1
    }
    export MEMORY_POSTGRES_URL="postgres://memory:$password@127.0.0.1:$port/postgres"
    export MEMORY_POSTGRES_CA="$tls/ca.crt"
    echo "postgres: test server on 127.0.0.1:$port, TLS on ($("$MEMORY_POSTGRES_BIN/postgres" --version))"
}

memory_postgres_start
