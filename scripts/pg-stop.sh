#!/usr/bin/env bash
# Stop the throwaway PostgreSQL started by scripts/pg-start.sh.
set -uo pipefail
DATADIR="${1:-${PGTEST_DIR:-/tmp/sparkscope-pg}}"
RUNUSER="${PGTEST_USER:-sparkscope}"
PG_CTL=$(command -v pg_ctl || ls /usr/lib/postgresql/*/bin/pg_ctl | head -1)
if [ "$(id -u)" = 0 ]; then runuser -u "$RUNUSER" -- "$PG_CTL" -D "$DATADIR" -m fast stop >/dev/null 2>&1
else "$PG_CTL" -D "$DATADIR" -m fast stop >/dev/null 2>&1; fi
exit 0
