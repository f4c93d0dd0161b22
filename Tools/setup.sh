#!/usr/bin/env bash
# Installs what TypedStore builds and checks with, if it is missing, from Debian's packages:
# the system libraries it builds against (libsqlite3-dev, zlib1g-dev, pkg-config), valgrind,
# which CI's instruction-count check runs (Tools/instruction-counts.py), and for the
# PostgreSQL engine libpq-dev and postgresql-15, whose server the tests start in a temporary
# folder (SQLite alone needs neither).
set -euo pipefail
missing=()
for package in libsqlite3-dev zlib1g-dev pkg-config valgrind libpq-dev postgresql-15; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
run() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "Installing ${missing[*]}" >&2
run apt-get update
DEBIAN_FRONTEND=noninteractive run apt-get install -y "${missing[@]}"
