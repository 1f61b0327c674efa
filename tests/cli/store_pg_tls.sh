#!/bin/bash
# store_pg_tls.sh - the metering store over TLS as deploy/overlays/postgres
# connects to it: a real PostgreSQL (scripts/pg-test-server) that lets the
# role tessera in over TLS only, with a server certificate for localhost
# signed by a test CA (scripts/make-test-cert), and the URL docs/install.md
# puts in the Secret tessera-db (tests/tools/install_db_url.py reads it from
# the guide: sslmode=verify-full&sslrootcert=...), given as the pods give it
# (TESSERA_DB), with this test's host, port, password and CA file put in.
# With it `tessera meter import` stores and `tessera usage` reads; with
# another CA, without sslrootcert (the URL the overlay used to ship), with a
# host name the certificate lacks, or without TLS, every command fails with
# libpq's reason and exit 1, and nothing is stored.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom # 3 devices
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
# no ~/.postgresql: libpq would look there for a root certificate
export HOME="$TMP/home"
mkdir -p "$HOME"

if ! ADMIN=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
scripts/make-test-cert "$TMP/ca" localhost
scripts/make-test-cert "$TMP/other" localhost # the same names, another CA

# the role and database of the guide's URL; a password that must be
# percent-encoded in a URL, as install.md says
PASSWORD='s3cr@t:/pw'
psql "$ADMIN" -v ON_ERROR_STOP=1 -AtXq -c "CREATE ROLE tessera LOGIN PASSWORD '$PASSWORD'" \
    -c "CREATE DATABASE tessera OWNER tessera" >"$TMP/psql.out" 2>&1 ||
    { bad "creating the role"; cat "$TMP/psql.out"; finish; exit 1; }
# TLS on, with the test CA's certificate; tessera gets in over TLS with its
# password only (the postgres role keeps its trusted loopback line for psql)
install -m 600 "$TMP/ca/tls.key" "$PG/data/server.key"
install -m 644 "$TMP/ca/tls.crt" "$PG/data/server.crt"
[ "$(id -u)" -ne 0 ] || chown postgres: "$PG/data/server.key" "$PG/data/server.crt"
printf '%s\n' "ssl = on" "ssl_cert_file = 'server.crt'" "ssl_key_file = 'server.key'" \
    >>"$PG/data/postgresql.conf"
printf '%s\n' "host all postgres 127.0.0.1/32 trust" \
    "hostssl tessera tessera 127.0.0.1/32 scram-sha-256" >"$PG/data/pg_hba.conf"
check "restart with TLS" scripts/pg-test-server restart "$PG"

# url CAFILE [HOST] [QUERY-CHANGE]: the guide's URL with this server's port,
# HOST (default localhost), the password, sslrootcert=CAFILE; QUERY-CHANGE
# "-sslrootcert" drops that parameter, "+k=v" adds one
DOC_URL=$(/usr/bin/python3 tests/tools/install_db_url.py docs/install.md)
check "install.md gives the URL ($DOC_URL)" [ -n "$DOC_URL" ]
url() {
    /usr/bin/python3 - "$DOC_URL" "$PORT" "$PASSWORD" "$@" <<'PY'
import sys
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit
doc, port, password, ca = sys.argv[1:5]
host = sys.argv[5] if len(sys.argv) > 5 else "localhost"
change = sys.argv[6] if len(sys.argv) > 6 else ""
u = urlsplit(doc)
query = [(k, ca if k == "sslrootcert" else v) for k, v in parse_qsl(u.query)]
assert ("sslmode", "verify-full") in query and "sslrootcert" in dict(query), doc
if change.startswith("-"):
    query = [(k, v) for k, v in query if k != change[1:]]
elif change.startswith("+"):
    query.append(tuple(change[1:].split("=", 1)))
user = u.username
print(urlunsplit((u.scheme, "%s:%s@%s:%s" % (user, quote(password, safe=""), host, port),
                  u.path, urlencode(query, safe="/"), "")))
PY
}
GOOD=$(url "$TMP/ca/ca.crt")
check "the URL keeps the guide's shape: $GOOD" \
    grep -q "^postgres://tessera:s3cr%40t%3A%2Fpw@localhost:$PORT/tessera?sslmode=verify-full&sslrootcert=$TMP/ca/ca.crt$" <<<"$GOOD"
cp "$TESSERA_FIXTURES/meter/lab.yaml" "$TMP/spec.yaml"
rows() { psql "$GOOD" -AtXqc "SELECT count(*) FROM samples" 2>&1; }

# 1. the guide's URL: stored over TLS, read back
# (the same two scrapes into SQLite give the usage PostgreSQL must give back)
for t in 1700000000 1700000015; do
    TESSERA_DB=$GOOD expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --at $t "$F"
    expect_in "$TMP/out" "3 device scrapes, 3 new samples"
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "sqlite:$TMP/ref.db" --at $t "$F"
done
TESSERA_DB=$GOOD expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" -o json
cp "$TMP/out" "$TMP/usage-pg.json"
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$TMP/ref.db" -o json
check "usage over TLS is SQLite's for the same scrapes" cmp -s "$TMP/out" "$TMP/usage-pg.json"
expect_in "$TMP/usage-pg.json" '"tenant": "lab"'
check "6 rows stored ($(rows))" [ "$(rows)" = 6 ]
ssl=$(psql "$GOOD" -AtXqc "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()" 2>&1)
check "the connection is TLS ($ssl)" [ "$ssl" = t ]

# refused URL: the command exits 1 with libpq's reason in its message; nothing stored
refused() { # NAME URL REASON
    TESSERA_DB=$2 expect_rc 1 "$TESSERA" meter import -f "$TMP/spec.yaml" --at 1700007200 "$F"
    expect_in "$TMP/err" "postgresql: "
    expect_in "$TMP/err" "$3"
    check "$1: nothing stored ($(rows))" [ "$(rows)" = 6 ]
}
# 2. a CA that did not sign the server's certificate
refused "wrong CA" "$(url "$TMP/other/ca.crt")" "certificate verify failed"
# 3. no sslrootcert: the URL deploy/overlays/postgres shipped before (libpq
# looks for ~/.postgresql/root.crt, which no container has)
refused "no sslrootcert" "$(url "$TMP/ca/ca.crt" localhost -sslrootcert)" \
    "root certificate file \"$HOME/.postgresql/root.crt\" does not exist"
# 4. verify-full checks the name: db.example is not in the certificate
# (hostaddr connects to this server; libpq checks the name in host)
refused "another host name" "$(url "$TMP/ca/ca.crt" db.example +hostaddr=127.0.0.1)" \
    "does not match host name \"db.example\""
# 5. the server takes tessera over TLS only: what succeeded above was TLS
refused "no TLS" "$(url "$TMP/ca/ca.crt" localhost +sslmode=disable | sed 's/sslmode=verify-full&//')" \
    "no encryption"
finish
