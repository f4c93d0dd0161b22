#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server for the benchmark's PostgreSQL rows, as the tests make theirs
# (Tests/TypedStoreTests/PostgreSQL/PostgreSQLTestServer.swift): a cluster in a folder of its
# own, a Unix socket there, fsync off, run as the postgres user when this runs as root (initdb
# refuses root).
#
#   Tools/postgresql-server.sh start FOLDER   # prints the server's URL
#   Tools/postgresql-server.sh stop FOLDER
#
#   url=$(Tools/postgresql-server.sh start /tmp/bench-pg)
#   swift run -c release typedstore-bench --only PostgreSQL --postgresql "$url"
#   Tools/postgresql-server.sh stop /tmp/bench-pg
set -euo pipefail
binaries=/usr/lib/postgresql/15/bin
command=${1:?usage: postgresql-server.sh start|stop FOLDER}
folder=${2:?usage: postgresql-server.sh start|stop FOLDER}
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$command" in
  start)
    [ -x "$binaries/initdb" ] || { echo "PostgreSQL 15 is not installed: run Tools/setup.sh" >&2; exit 1; }
    mkdir -p "$folder"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$folder"
    port=$((20000 + $$ % 12000))
    as_owner "$binaries/initdb" -D "$folder/data" -U postgres --auth-local=trust >/dev/null 2>&1
    as_owner "$binaries/pg_ctl" -D "$folder/data" -l "$folder/server.log" -w -t 60 \
      -o "-k $folder -p $port -c listen_addresses='' -c fsync=off -c max_connections=1000 -c unix_socket_permissions=0777" start >/dev/null
    echo "postgresql:///postgres?host=$folder&port=$port&user=postgres"
    ;;
  stop)
    as_owner "$binaries/pg_ctl" -D "$folder/data" -m fast -w stop >/dev/null
    rm -rf "$folder"
    ;;
  *) echo "usage: postgresql-server.sh start|stop FOLDER" >&2; exit 64 ;;
esac
