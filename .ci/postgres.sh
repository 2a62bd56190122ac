# Sourced by .ci/run: a throwaway PostgreSQL cluster on 127.0.0.1 for the tests.
# Installs Debian's postgresql if missing, runs initdb/pg_ctl as the unprivileged `postgres`
# user in a temporary directory on a free port, creates a database, exports
# HOSTSTAND_TEST_PG and stops (and removes) the cluster when the calling shell exits.
# Durability is off (fsync, synchronous_commit): the cluster lives for one test run only.

pg_bin() {
    local bin
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$bin" ] && [ -x "$bin/initdb" ] && echo "$bin"
}

if ! PG_BIN=$(pg_bin); then
    echo "ci: installing PostgreSQL from Debian's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends postgresql >/dev/null
    PG_BIN=$(pg_bin)
fi

PG_USER=postgres
id "$PG_USER" >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql "$PG_USER"
PG_DIR=$(mktemp -d /tmp/hoststand-pg.XXXXXX)
chown "$PG_USER" "$PG_DIR"
PG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PG_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
printf '%s\n' "$PG_PASSWORD" >"$PG_DIR/pwfile"
chown "$PG_USER" "$PG_DIR/pwfile"

as_pg() { (cd "$PG_DIR" && runuser -u "$PG_USER" -- "$@"); }

stop_postgres() {
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
}
trap stop_postgres EXIT

as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U hoststand --pwfile="$PG_DIR/pwfile" \
    --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log"
as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start -o \
    "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off \
     -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" >/dev/null
as_pg env PGPASSWORD="$PG_PASSWORD" "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" \
    -U hoststand hoststand_test

export HOSTSTAND_TEST_PG="postgresql://hoststand:$PG_PASSWORD@127.0.0.1:$PG_PORT/hoststand_test"
echo "ci: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT" >&2
