#!/bin/sh
# fmt_file: formats one Go file with gofmt. The arguments arrive as JSON on stdin; the
# schema in fmt_file.json keeps quotes and backslashes out of the path, so a sed expression
# reads it safely.
set -eu
args=$(tr -d '\n')
path=$(printf '%s' "$args" | sed -n 's/.*"path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
case "$path" in
*..*) echo "path must stay inside the workspace: $path" >&2; exit 2 ;;
esac
if ! command -v gofmt >/dev/null 2>&1; then
	echo "gofmt is not installed or not on PATH; install Go from https://go.dev/dl/" >&2
	exit 127
fi
diff=$(gofmt -d "$path")
if [ -z "$diff" ]; then
	echo "$path is already formatted."
	exit 0
fi
printf '%s\n' "$diff"
if printf '%s' "$args" | grep -q '"check"[[:space:]]*:[[:space:]]*true'; then
	echo "(check only: $path was not changed)"
else
	gofmt -w "$path"
	echo "$path formatted."
fi
