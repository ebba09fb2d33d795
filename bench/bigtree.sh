#!/usr/bin/env bash
# Issue 26's kernel-size bars: builds the generated 100,000-file tree once (deterministic,
# bench/bigtree), builds toolsd, and runs the driver (bench/bigtree/bigtree_test.go).
#
# Settings (environment):
#   BIGTREE=/tmp/toolsd-bigtree  where the tree is kept (made when missing); any git work
#                                tree works too, e.g. Debian's linux-source unpacked and
#                                committed: BIGTREE=/usr/src/linux-source-6.1
#   BEFORE_BIN=path              a second toolsd binary measured in turn (before/after)
#   SEDS=10 TEMPS=5 REOPENS=3 IDLE=5   repetitions, and seconds idle before RssAnon is read
set -euo pipefail
cd "$(dirname "$0")/.."
export BIGTREE=${BIGTREE:-/tmp/toolsd-bigtree}
if [[ ! -d $BIGTREE/.git ]]; then
	echo "== generating $BIGTREE (about a minute)" >&2
	go run ./bench/cmd/bigtree "$BIGTREE"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/toolsd" ./cmd/toolsd
TOOLSD_BIN=$tmp/toolsd go test ./bench/bigtree -run '^$' -bench BigTree -benchtime 1x -timeout 60m
