#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the tests (the `postgresql`
# CTest fixture) and the benchmarks:
#
#   tests/pg/server.sh start STATE_DIR   # a fresh cluster on a free port
#   tests/pg/server.sh stop STATE_DIR    # stops it and deletes its data
#   tests/pg/server.sh pause STATE_DIR   # stops it, keeping its data (an outage)
#   tests/pg/server.sh resume STATE_DIR  # starts it again on the same port, same data
#
# `start` writes into STATE_DIR: `url` (postgresql://postgres@127.0.0.1:PORT/postgres,
# one line), `port`, `datadir` (the cluster) and `log` (the path of the
# server's log). The cluster lives in a mktemp directory under /tmp, trusts
# every local connection, runs with fsync off, and listens on loopback only.
# PostgreSQL refuses to run as root: as root, the server runs as the
# `postgres` user. Starting over a running server stops it first; stopping
# when nothing runs succeeds.
set -euo pipefail

say() { printf '==> %s\n' "$*"; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop|pause|resume STATE_DIR" >&2
  exit 2
}

PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

# The directory holding initdb and pg_ctl: the newest installed server
# (Debian keeps them out of PATH, in /usr/lib/postgresql/<version>/bin),
# else pg_config's, else PATH's.
find_bindir() {
  local dir newest=
  newest=$(for dir in /usr/lib/postgresql/*/bin; do
    [[ -x $dir/initdb && -x $dir/pg_ctl ]] && echo "$dir"
  done | sort -V | tail -1)
  if [[ -n $newest ]]; then
    echo "$newest"
    return
  fi
  if command -v pg_config >/dev/null && dir=$(pg_config --bindir 2>/dev/null) && [[ -x $dir/initdb && -x $dir/pg_ctl ]]; then
    echo "$dir"
    return
  fi
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
    return
  fi
  die "no PostgreSQL server found (initdb, pg_ctl in /usr/lib/postgresql/*/bin, \`pg_config --bindir\` or PATH); install it: apt-get install postgresql"
}

# as_server CMD...: runs CMD as the user that owns the cluster, from a
# directory that user can enter, without the caller's PG* settings.
as_server() {
  local clean=(env -u PGDATA -u PGPORT -u PGHOST -u PGUSER -u PGDATABASE -u PGOPTIONS)
  if [[ $(id -u) -eq 0 ]]; then
    (cd / && "${clean[@]}" HOME=/tmp setpriv --reuid=postgres --regid=postgres --init-groups -- "$@")
  else
    (cd / && "${clean[@]}" "$@")
  fi
}

# A TCP port nobody listens on right now, as the kernel hands it out.
free_port() {
  "$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# The state files, if STATE_DIR holds a server's.
state_file() { [[ -f $state/$1 ]] && head -1 "$state/$1"; }

stop_server() {
  local datadir tmp
  datadir=$(state_file datadir || true)
  if [[ -z $datadir ]]; then
    say "no PostgreSQL server recorded in $state: nothing to stop"
    rm -f "$state/url" "$state/port" "$state/log"
    return 0
  fi
  tmp=$(dirname "$datadir")
  if [[ -d $datadir ]]; then
    local bindir
    bindir=$(find_bindir)
    if as_server "$bindir/pg_ctl" status -D "$datadir" >/dev/null 2>&1; then
      say "stopping the PostgreSQL server in $datadir"
      if ! as_server "$bindir/pg_ctl" stop -D "$datadir" -m fast -w -t 60 >/dev/null; then
        say "a fast shutdown did not finish: stopping it immediately"
        as_server "$bindir/pg_ctl" stop -D "$datadir" -m immediate -w -t 60 >/dev/null || true
      fi
    else
      say "the PostgreSQL server in $datadir is not running"
    fi
  else
    say "the PostgreSQL data directory $datadir is already gone"
  fi
  # Only a directory this script made (it holds the marker) is deleted.
  if [[ -f $tmp/.fingerprint-test-postgresql ]]; then
    say "removing $tmp"
    rm -rf -- "$tmp"
  fi
  rm -f "$state/url" "$state/port" "$state/datadir" "$state/log"
}

# pg_start BINDIR DATADIR LOG PORT TMP: the server, listening on loopback only.
pg_start() {
  as_server "$1/pg_ctl" start -D "$2" -l "$3" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $4 -c unix_socket_directories=$5 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    >/dev/null 2>"$5/pg_ctl.err"
}

# An outage: the server goes away (a fast shutdown, as `systemctl stop`
# does), its data stays, and `resume` brings it back on the same port, so
# the same URL reaches it again.
pause_server() {
  local datadir bindir
  datadir=$(state_file datadir || true)
  [[ -n $datadir && -d $datadir ]] || die "no PostgreSQL server recorded in $state: nothing to pause"
  bindir=$(find_bindir)
  say "pausing the PostgreSQL server in $datadir (its data stays)"
  as_server "$bindir/pg_ctl" stop -D "$datadir" -m fast -w -t 60 >/dev/null
}

resume_server() {
  local datadir bindir port log
  datadir=$(state_file datadir || true)
  port=$(state_file port || true)
  log=$(state_file log || true)
  [[ -n $datadir && -d $datadir && -n $port ]] || die "no paused PostgreSQL server recorded in $state: nothing to resume"
  bindir=$(find_bindir)
  say "resuming the PostgreSQL server in $datadir on 127.0.0.1:$port"
  if ! pg_start "$bindir" "$datadir" "$log" "$port" "$(dirname "$datadir")"; then
    cat "$(dirname "$datadir")/pg_ctl.err" >&2
    tail -20 "$log" >&2 || true
    die "the PostgreSQL server did not start again on port $port (the end of $log is above)"
  fi
  "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -t 10 || die "the PostgreSQL server does not answer on 127.0.0.1:$port"
}

start_server() {
  local bindir tmp datadir log port attempt
  bindir=$(find_bindir)
  if [[ -n $(state_file datadir || true) ]]; then
    say "$state already records a server: stopping it first"
    stop_server
  fi
  if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
    die "running as root, and there is no \`postgres\` user to run the server as (PostgreSQL refuses root); install it: apt-get install postgresql"
  fi
  mkdir -p "$state"
  # Under /tmp, not $TMPDIR: the server's user must reach it, and the
  # socket's path must stay under 108 bytes.
  tmp=$(mktemp -d /tmp/fingerprint-pg.XXXXXX)
  touch "$tmp/.fingerprint-test-postgresql"
  datadir=$tmp/data
  log=$tmp/server.log
  if [[ $(id -u) -eq 0 ]]; then
    chown -R postgres:postgres "$tmp"
  fi
  # Recorded now, so that `stop` cleans up after a start that fails below.
  echo "$datadir" >"$state/datadir"
  echo "$log" >"$state/log"

  say "creating a PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') cluster in $datadir ($bindir)"
  if ! as_server "$bindir/initdb" -D "$datadir" --auth=trust --username=postgres -E UTF8 --locale=C \
    >"$tmp/initdb.log" 2>&1; then
    cat "$tmp/initdb.log" >&2
    die "initdb failed (its output is above)"
  fi

  # The port is free when asked for, but another process may take it before
  # the server binds it: then try another.
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    say "starting it on 127.0.0.1:$port (log: $log)"
    if pg_start "$bindir" "$datadir" "$log" "$port" "$tmp"; then
      break
    fi
    if ((attempt < 5)) && grep -qE 'could not bind|Address already in use' "$log"; then
      say "port $port was taken meanwhile: trying another"
      continue
    fi
    cat "$tmp/pg_ctl.err" >&2
    tail -20 "$log" >&2 || true
    die "the PostgreSQL server did not start (the end of $log is above)"
  done
  if ! "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -t 10; then
    tail -20 "$log" >&2 || true
    die "the PostgreSQL server started but does not answer on 127.0.0.1:$port"
  fi
  echo "$port" >"$state/port"
  echo "postgresql://postgres@127.0.0.1:$port/postgres" >"$state/url"
  say "PostgreSQL is ready: $(cat "$state/url")"
}

(($# == 2)) || usage
state=$2
case $1 in
  start) start_server ;;
  stop) stop_server ;;
  pause) pause_server ;;
  resume) resume_server ;;
  *) usage ;;
esac
