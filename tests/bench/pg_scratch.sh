# Sourced by the benchmarks that time a query on PostgreSQL too
# (consumers_bench.sh, million_bench.sh): a scratch server of their own
# (tests/pg/server.sh) in their work directory, one database on it.
#
#   source tests/bench/pg_scratch.sh
#   pg_scratch_start WORK-DIR DATABASE   # sets DB to the database's URL
#   pg_scratch_stop WORK-DIR             # in the script's EXIT trap; quiet, never fails
pg_scratch_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

pg_scratch_start() {
  local work=$1 name=$2 server
  bash "$pg_scratch_here/../pg/server.sh" start "$work/server" >&2
  server=$(cat "$work/server/url")
  psql "$server" -X -v ON_ERROR_STOP=1 -qAtc "CREATE DATABASE $name" >/dev/null
  DB=${server%/*}/$name
}

pg_scratch_stop() {
  bash "$pg_scratch_here/../pg/server.sh" stop "$1/server" >/dev/null 2>&1 || true
}
