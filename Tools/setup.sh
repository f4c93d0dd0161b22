#!/usr/bin/env bash
# Installs the system libraries TypedStore builds against, if they are missing:
# SQLite (libsqlite3-dev), zlib (zlib1g-dev) and pkg-config, from Debian's packages.
set -euo pipefail
missing=()
for package in libsqlite3-dev zlib1g-dev pkg-config; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
run() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "Installing ${missing[*]}" >&2
run apt-get update
DEBIAN_FRONTEND=noninteractive run apt-get install -y "${missing[@]}"
