#!/usr/bin/env bash
# demo.sh: build the bundled example, profile it with er collect, and print its function list and call tree.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d /tmp/er-demo.XXXXXX)
gcc -O2 -g -fno-omit-frame-pointer -fno-inline -o "$out/demo" examples/demo/demo.c
echo "== er collect -o $out/demo.er $out/demo"
bin/er collect -o "$out/demo.er" "$out/demo"
echo
echo "== er print -functions -calltree $out/demo.er"
bin/er print -functions -calltree "$out/demo.er"
echo
echo "(the experiment stays in $out/demo.er: try bin/er print -callers-callees $out/demo.er)"
