#!/bin/sh
# sqlite_query: runs one read-only query with the sqlite3 CLI. The arguments arrive as JSON
# on stdin; the schema in sqlite_query.json keeps quotes and backslashes out of the values,
# so a sed expression reads them safely.
set -eu
args=$(tr -d '\n')
str() { printf '%s' "$args" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"; }
query=$(str query)
db=$(str database)
[ -n "$db" ] || db=demo.db
case "$db" in
*..*) echo "database must stay inside the workspace: $db" >&2; exit 2 ;;
esac
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "sqlite3 is not installed on this machine: install the sqlite3 command-line program (apt install sqlite3, brew install sqlite) to use this tool" >&2
	exit 127
fi
if [ ! -f "$db" ]; then
	echo "there is no database file $db in the workspace" >&2
	exit 2
fi
exec sqlite3 -readonly -bail -header -column "$db" "$query"
