#!/usr/bin/env bash
# fuzz.sh: run every Fuzz target of the module for $FUZZTIME each (default 5s).
# Go's fuzzer sometimes ends a run that found nothing with "context deadline exceeded" when the time runs
# out while a worker is busy (or minimizing a new input); such a run (no failing input written) is tried
# again, up to three times in all (a CI run once had it twice in a row, FuzzReadTable). A real failure
# writes its input under testdata/fuzz and fails at once.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
cd "$(dirname "$0")/.."
log=$(mktemp /tmp/er-fuzz.XXXXXX)
trap 'rm -f "$log"' EXIT
n=0
for pkg in $($GO list ./...); do
	for target in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		for try in 1 2 3; do
			echo "fuzz $pkg $target ($FUZZTIME)"
			if $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 1s "$pkg" >"$log" 2>&1; then
				break
			fi
			if [ "$try" -lt 3 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
				echo "fuzz: $target: the fuzzer timed out without a failure; again"
				continue
			fi
			cat "$log"
			exit 1
		done
		n=$((n + 1))
	done
done
echo "fuzz: $n targets passed"
