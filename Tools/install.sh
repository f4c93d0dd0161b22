#!/usr/bin/env bash
# Puts the `typedstore` tool on your PATH: builds it in release mode and copies it to a
# folder, ~/.local/bin unless --prefix names another; prints where it put it.
#
#   Tools/install.sh                       # -> ~/.local/bin/typedstore
#   Tools/install.sh --prefix /usr/local/bin
#   Tools/install.sh --binary FILE ...     # install FILE, built already, instead of building
set -euo pipefail

usage() { echo "usage: Tools/install.sh [--prefix DIR] [--binary FILE]"; }

prefix="${HOME}/.local/bin"
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a folder}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --binary) binary="${2:?--binary needs a file}"; shift 2 ;;
    --binary=*) binary="${1#--binary=}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
# Paths as the caller typed them, before the build moves to the package's folder.
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
if [ -n "$binary" ]; then
  case "$binary" in /*) ;; *) binary="$PWD/$binary" ;; esac
else
  cd "$(dirname "$0")/.."
  swift build -c release --product typedstore >&2
  binary="$(swift build -c release --show-bin-path)/typedstore"
fi

mkdir -p "$prefix"
install -m 0755 "$binary" "$prefix/typedstore"
echo "installed $("$prefix/typedstore" --version) at $prefix/typedstore"
case ":${PATH}:" in
  *":${prefix}:"*) ;;
  *) echo "$prefix is not on your PATH; add it with: export PATH=\"$prefix:\$PATH\"" ;;
esac
