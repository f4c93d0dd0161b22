#!/usr/bin/env bash
# Installs what TypedStore builds and checks with, if it is missing, from Debian's packages:
# the system libraries it builds against (libsqlite3-dev, zlib1g-dev, pkg-config), valgrind,
# which CI's instruction-count check runs (Tools/instruction-counts.py), and for the
# PostgreSQL engine libpq-dev and postgresql-15, whose server the tests start in a temporary
# folder (SQLite alone needs neither).
set -euo pipefail
missing=()
for package in libsqlite3-dev zlib1g-dev pkg-config valgrind; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
postgresql=()
for package in libpq-dev postgresql-15; do
  dpkg -s "$package" >/dev/null 2>&1 || postgresql+=("$package")
done
[ ${#missing[@]} -eq 0 ] && [ ${#postgresql[@]} -eq 0 ] && exit 0
run() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
run apt-get update
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive run apt-get install -y "${missing[@]}"
fi
if [ ${#postgresql[@]} -gt 0 ]; then
  # Apart, so that SQLite's packages are installed where PostgreSQL 15 is not to be had (its
  # tests then fail with the reason). The tests start servers of their own: the cluster
  # Debian's package makes and starts is not used.
  echo "Installing ${postgresql[*]}" >&2
  DEBIAN_FRONTEND=noninteractive run apt-get install -y "${postgresql[@]}"
fi
