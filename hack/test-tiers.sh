#!/usr/bin/env bash
# test-tiers.sh runs each `make` target it is given in order, as `make test` does with its tiers,
# and prints how long each took when the run ends, passed or failed (CI reads the table to see
# where its 90 minutes go). It stops at the first tier that fails, like make would.
set -uo pipefail

make=${MAKE:-make}
declare -a names secs results
start=$SECONDS
summary() {
	printf '\n=== tier durations\n'
	for i in "${!names[@]}"; do
		printf '%-20s %6ds  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
	done
	printf '%-20s %6ds\n' "total" "$((SECONDS - start))"
}
for tier in "$@"; do
	t0=$SECONDS
	"$make" --no-print-directory "$tier"
	rc=$?
	names+=("$tier") secs+=("$((SECONDS - t0))")
	if [ "$rc" -ne 0 ]; then
		results+=("FAILED (exit $rc)")
		summary
		exit "$rc"
	fi
	results+=("passed")
done
summary
