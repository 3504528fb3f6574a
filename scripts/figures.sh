#!/usr/bin/env bash
# The house's figures (docs/architecture.md, "Keeping the house"): lines
# per package, the methods of the biggest types, the lines of app's
# adapters, and task's coverage from its own tests. Run from the root of a
# checkout; a second argument-less run on an older commit (git worktree)
# gives the figures to compare.
set -euo pipefail
cd "${1:-.}"
echo "## lines per package (code / tests)"
for d in $(go list -f '{{.Dir}}' ./...); do
	code=$(find "$d" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cat {} + 2>/dev/null | wc -l)
	tests=$(find "$d" -maxdepth 1 -name '*_test.go' -exec cat {} + 2>/dev/null | wc -l)
	name=${d#"$PWD"}
	name=${name#/}
	printf '%6d %6d  %s\n' "$code" "$tests" "${name:-. (pullwright)}"
done
echo "## most methods on one type (non-test code)"
grep -roE --include='*.go' --exclude='*_test.go' '^func \([a-z]+ \*?[A-Z][A-Za-z]*\) ' . |
	sed -E 's|^\./(.*)/[^/]*\.go:func \([a-z]+ \*?([A-Za-z]+)\) |\1.\2|' | sort | uniq -c | sort -rn | head -5
echo "## app adapter lines"
wc -l app/adapters*.go app/deps.go 2>/dev/null | tail -1
echo "## task coverage from its own tests"
go test -count=1 -cover ./task/ | sed -E 's/.*(coverage: [0-9.]+%).*/\1/'
