#!/usr/bin/env bash
# perf-compare.sh: how many of perf's samples have a complete call stack (one that reaches ROOT, such as
# main or a thread's start routine), for comparison with er. Usage:
#   scripts/perf-compare.sh fp|dwarf ROOT program [args...]
set -euo pipefail
mode=$1 root=$2
shift 2
out=$(mktemp -d /tmp/er-perf.XXXXXX)
trap 'rm -rf "$out"' EXIT
perf record -q --call-graph "$mode" -e task-clock -c 1000000 -o "$out/perf.data" "$@" >/dev/null 2>&1
perf script -i "$out/perf.data" -F tid,ip,sym 2>/dev/null |
	awk -v root="$root" -v mode="$mode" -v prog="$1" 'BEGIN { RS = ""; FS = "\n" }
	{ n++; hit = 0; for (i = 2; i <= NF; i++) { split($i, a, " "); if (a[2] == root) hit = 1 } ok += hit }
	END { printf "perf --call-graph %s %s: %d samples, %d reach %s: %.1f%%\n", mode, prog, n, ok, root, n ? 100 * ok / n : 0 }'
