#!/bin/sh
# go_test_pkg: runs go test for one package. The arguments arrive as JSON on stdin. The
# schema in go_test_pkg.json only lets through values without quotes or backslashes, so a
# sed expression reads them safely; a tool in another language would use a JSON parser.
set -eu
args=$(tr -d '\n')
str() { printf '%s' "$args" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"; }
pkg=$(str package)
run=$(str run)
set -- test
if printf '%s' "$args" | grep -q '"verbose"[[:space:]]*:[[:space:]]*true'; then
	set -- "$@" -v
fi
if [ -n "$run" ]; then
	set -- "$@" -run "$run"
fi
if ! command -v go >/dev/null 2>&1; then
	echo "go is not installed or not on PATH; install Go from https://go.dev/dl/" >&2
	exit 127
fi
exec go "$@" "$pkg"
