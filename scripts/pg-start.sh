#!/usr/bin/env bash
# Start a throwaway PostgreSQL for tests and development, as an unprivileged user (PostgreSQL
# refuses to run as root), on a local port. Prints the database URL on stdout.
#   scripts/pg-start.sh [DATADIR] [PORT]      stop with: scripts/pg-stop.sh [DATADIR]
set -euo pipefail
DATADIR="${1:-${PGTEST_DIR:-/tmp/sparkscope-pg}}"
PORT="${2:-${PGTEST_PORT:-54329}}"
RUNUSER="${PGTEST_USER:-sparkscope}"

find_bin() {
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
  local d; for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/$1" ]; then echo "$d/$1"; return; fi
  done
  echo "cannot find $1: install PostgreSQL (e.g. apt-get install postgresql)" >&2; exit 1
}
INITDB=$(find_bin initdb); PG_CTL=$(find_bin pg_ctl)

as_user() {
  if [ "$(id -u)" = 0 ]; then
    id "$RUNUSER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUNUSER"
    runuser -u "$RUNUSER" -- "$@"
  else
    "$@"
  fi
}

# The role that tests use to check a refused login: it must give its password (scram), while every
# other local connection is trusted. Put first in pg_hba.conf, also on an existing data folder.
LOGIN_ROLE="sparkscope_login"
ensure_login_rule() {
  local hba="$DATADIR/pg_hba.conf"
  if ! grep -q "$LOGIN_ROLE" "$hba"; then
    as_user sh -c "{ echo 'host all $LOGIN_ROLE 127.0.0.1/32 scram-sha-256'; cat '$hba'; } > '$hba.new' && mv '$hba.new' '$hba'"
    return 0
  fi
  return 1
}

mkdir -p "$DATADIR"
if [ "$(id -u)" = 0 ]; then chown "$RUNUSER" "$DATADIR" 2>/dev/null || { id "$RUNUSER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUNUSER"; chown "$RUNUSER" "$DATADIR"; }; fi
if [ ! -f "$DATADIR/PG_VERSION" ]; then
  as_user "$INITDB" -D "$DATADIR" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null \
    || as_user "$INITDB" -D "$DATADIR" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
fi
if ensure_login_rule && as_user "$PG_CTL" -D "$DATADIR" status >/dev/null 2>&1; then
  as_user "$PG_CTL" -D "$DATADIR" reload >/dev/null
fi
if ! as_user "$PG_CTL" -D "$DATADIR" status >/dev/null 2>&1; then
  as_user "$PG_CTL" -D "$DATADIR" -l "$DATADIR/server.log" -w -t 60 \
    -o "-p $PORT -k $DATADIR -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
    start >/dev/null
fi
# Plain postgresql://, the form users write; Sparkscope connects through psycopg 3.
echo "postgresql://postgres@127.0.0.1:$PORT/postgres"
