#!/usr/bin/env bash
# Runs the suites Tools/postgresql-suites.txt lists a second time, with every store
# PersistentContainer.makeTest makes on a throwaway PostgreSQL server (a schema each), from
# the build `swift test` left (run it first). Each of those tests then checks on PostgreSQL
# what it checks on a store file, with the same code; tests of what only a file has are left
# out (`testsRunOnPostgreSQL`).
#
#   swift test -Xswiftc -warnings-as-errors && Tools/test-postgresql.sh
set -euo pipefail
cd "$(dirname "$0")/.."
folder=$(mktemp -d /tmp/typedstore-test-pg.XXXXXX)
trap 'Tools/postgresql-server.sh stop "$folder" >/dev/null 2>&1 || true; rm -rf "$folder"' EXIT
url=$(Tools/postgresql-server.sh start "$folder")
# Names only: a blank line would make the filter match every test.
suites=$(grep -v '^#' Tools/postgresql-suites.txt | grep -E '^[A-Za-z]+$' | paste -sd '|')
TYPEDSTORE_TEST_POSTGRESQL_URL="$url" timeout --kill-after=30 900 swift test --skip-build "$@" --filter "$suites"
