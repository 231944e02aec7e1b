#!/usr/bin/env bash
# protobuf's Debian source package, of the version of the installed protoc, into
# build-deps/protobuf (a deb-src line is added to apt's sources if there is none): the
# TensorFlow plugin and the release build a static, position-independent protobuf from it
# (python/protobuf.cmake). Needs dpkg-dev (apt-get source).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

if [ ! -f build-deps/protobuf/CMakeLists.txt ]; then
  version=$(dpkg-query -W -f='${Version}' libprotobuf-dev)
  if ! apt-get source --print-uris "protobuf=$version" > /dev/null 2>&1; then
    echo "fetch_protobuf_source: adding Debian's source repositories (deb-src) to apt"
    # The same repositories as the binary packages', in either of apt's formats.
    shopt -s nullglob
    deb822=(/etc/apt/sources.list.d/*.sources)
    one_line=()
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      if [ -f "$f" ]; then one_line+=("$f"); fi
    done
    if ((${#deb822[@]})); then
      sed 's/^Types: deb$/Types: deb-src/' "${deb822[@]}" | $SUDO tee /etc/apt/sources.list.d/graphjit-deb-src.sources > /dev/null
    fi
    if ((${#one_line[@]})); then
      sed -n 's/^deb /deb-src /p' "${one_line[@]}" | $SUDO tee /etc/apt/sources.list.d/graphjit-deb-src.list > /dev/null
    fi
    $SUDO apt-get update -qq
  fi
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get source -qq "protobuf=$version" > /dev/null 2>&1) \
    || { echo "fetch_protobuf_source: apt-get source protobuf=$version failed" >&2; exit 1; }
  mkdir -p build-deps
  rm -rf build-deps/protobuf
  mv "$tmp"/protobuf-*/ build-deps/protobuf
  rm -rf "$tmp"
fi

