#!/usr/bin/env bash
# fuzz.sh: run every Fuzz target of the module for $FUZZTIME each (default 5s).
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
cd "$(dirname "$0")/.."
n=0
for pkg in $($GO list ./...); do
	for target in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target ($FUZZTIME)"
		$GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 1s "$pkg" >/tmp/er-fuzz.$$ 2>&1 || { cat /tmp/er-fuzz.$$; rm -f /tmp/er-fuzz.$$; exit 1; }
		n=$((n + 1))
	done
done
rm -f /tmp/er-fuzz.$$
echo "fuzz: $n targets passed"
