#!/usr/bin/env bash
# Rebuilds ../check.wasm, tree-sitter's Python parser as a WebAssembly module,
# from check.c and the C sources that two Go modules ship (see the versions
# below): the tree-sitter runtime in github.com/tree-sitter/go-tree-sitter
# and the grammar in github.com/tree-sitter/tree-sitter-python.
# Needs Debian's clang, lld and wasi-libc (apt-get install clang lld wasi-libc).
# check.wasm is committed, so building the bot never needs this.
set -euo pipefail
cd "$(dirname "$0")"
RUNTIME_VERSION=v0.25.0
PYTHON_VERSION=v0.23.6
runtime=$(go mod download -json "github.com/tree-sitter/go-tree-sitter@$RUNTIME_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
python=$(go mod download -json "github.com/tree-sitter/tree-sitter-python@$PYTHON_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
sysroot=${WASI_SYSROOT:-/usr}
# HAVE_ENDIAN_H: wasi-libc has endian.h, which the runtime does not know.
# A reactor (no main): the host calls the exported functions. -O2 keeps the
# parse fast; the exports are all the host uses.
clang --target=wasm32-wasi --sysroot="$sysroot" -O2 -std=c11 \
	-D_POSIX_C_SOURCE=200112L -D_DEFAULT_SOURCE -DNDEBUG -DHAVE_ENDIAN_H \
	-I"$runtime/include" -I"$runtime/src" -I"$python/src" \
	-mexec-model=reactor \
	-Wl,--export=pc_alloc -Wl,--export=pc_free -Wl,--export=pc_check \
	-Wl,--strip-all \
	-o ../check.wasm \
	check.c "$runtime/src/lib.c" "$python/src/parser.c" "$python/src/scanner.c"
echo "built check.wasm ($(wc -c <../check.wasm) bytes) from tree-sitter $RUNTIME_VERSION and tree-sitter-python $PYTHON_VERSION"
