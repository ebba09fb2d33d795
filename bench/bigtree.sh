#!/usr/bin/env bash
# Issue 26's kernel-size bars: builds the generated 100,000-file tree once (deterministic,
# bench/bigtree), or Debian's linux-source-6.1 as a git repository, builds toolsd, and runs
# the driver (bench/bigtree/bigtree_test.go).
#
# Settings (environment):
#   BIGTREE=/tmp/toolsd-bigtree  where the tree is kept (made when missing); any git work
#                                tree works too
#   KERNEL=1                     the tree is Debian's linux-source-6.1 (apt-get download from
#                                the machine's Debian mirror; the version is printed), in
#                                BIGTREE=/tmp/toolsd-linux unless set: 78k files, 5k folders
#   BEFORE_BIN=path              a second toolsd binary measured in turn (before/after)
#   SANDBOX=off                  bash runs unconfined (the sandbox's own cost per call apart)
#   RUNS=1                       rounds, each binary in turn (interleaved), one table row each
#   SEDS=10 TEMPS=5 REOPENS=3 IDLE=5   repetitions, and seconds idle before RssAnon is read
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n ${KERNEL:-} ]]; then
	export BIGTREE=${BIGTREE:-/tmp/toolsd-linux} EDITEE=${EDITEE:-kernel/fork.c}
	if [[ ! -d $BIGTREE/.git ]]; then
		echo "== unpacking linux-source-6.1 into $BIGTREE" >&2
		dl=$(mktemp -d)
		(cd "$dl" && apt-get download linux-source-6.1)
		ls "$dl"/*.deb >&2
		dpkg-deb -x "$dl"/linux-source-6.1_*.deb "$dl/x"
		mkdir -p "$BIGTREE"
		tar -C "$BIGTREE" --strip-components=1 -xJf "$dl/x/usr/src/linux-source-6.1.tar.xz"
		rm -rf "$dl"
		# Debian's packaging ignores everything at the top level ("/*"); a kernel checkout
		# does not.
		sed -i '/^# Debian packaging/,$d' "$BIGTREE/.gitignore"
		g() { GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C "$BIGTREE" "$@"; }
		g init -q && g add -A && g -c user.email=b@b -c user.name=b commit -qm linux-source-6.1
	fi
fi
export BIGTREE=${BIGTREE:-/tmp/toolsd-bigtree}
if [[ ! -d $BIGTREE/.git ]]; then
	echo "== generating $BIGTREE (about a minute)" >&2
	go run ./bench/cmd/bigtree "$BIGTREE"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/toolsd" ./cmd/toolsd
TOOLSD_BIN=$tmp/toolsd go test ./bench/bigtree -run '^$' -bench BigTree -benchtime "${RUNS:-1}x" -timeout 180m
