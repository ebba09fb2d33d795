#!/usr/bin/env bash
# Runs toolsd's benchmarks of issue 2 in one go and prints them side by side with ratios:
# spawn to initialize result, tools/execute read round trip (p50, p99), 64 concurrent
# callers, and bash printing BIG_BYTES (default 1 GiB). See bench/README.md.
#
# Settings (environment):
#   BIG_BYTES=1073741824  size of the bash output in benchmark 4
#   SPAWNS=30             spawns per server in benchmark 1
#   CALLS=2000            sequential calls per server and client in benchmark 2
#   CONC_CALLS=20000      calls per server and client in benchmark 3
#   CONC_RUNS=3           runs of benchmark 3 (the servers take turns; the table shows medians)
#   ONLY="spawn read concurrent big attach"   which benchmarks to run
#   OTHERS=1              then run the other bench scripts (grep_vs_rg.sh, hotreload, checkpoint, hooks, acp), if present
#
# Results: the table on stdout; the raw JSON lines and the table also go to
# bench/results/<UTC time>.{jsonl,txt} (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."

BIG_BYTES=${BIG_BYTES:-1073741824}
SPAWNS=${SPAWNS:-30}
CALLS=${CALLS:-2000}
CONC_CALLS=${CONC_CALLS:-20000}
CONC_RUNS=${CONC_RUNS:-3}
ONLY=${ONLY:-spawn read concurrent big attach}
ATTACH_ITERS=${ATTACH_ITERS:-30}
OTHERS=${OTHERS:-1}

want() { [[ " $ONLY " == *" $1 "* ]]; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
out=bench/results/$stamp.jsonl
: >"$out"
log=$tmp/log

step() { printf '== %s\n' "$*" >&2; }

step "building toolsd, the echo floor, the Go driver and the report into $tmp"
# Static, as the README builds toolsd (no cgo: the dynamic loader and libc's start cost every
# start of the binary about 0.7 ms); the echo floor the same way.
CGO_ENABLED=0 go build -o "$tmp/" ./cmd/toolsd ./cmd/toolsd-guard
CGO_ENABLED=0 go build -o "$tmp/echo" ./bench/rpc/echo
go build -o "$tmp/report" ./bench/rpc/report
go test -c -o "$tmp/rpcbench.test" ./bench/rpc

if grep -q '"resolved"' bench/rpc/node/package-lock.json; then
	echo "bench/rpc/node/package-lock.json records where packages came from: strip the resolved fields (npm ci installs from integrity)" >&2
	exit 1
fi
step "npm ci in bench/rpc/node"
(cd bench/rpc/node && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

# Issue 2's numbers are those of a daemon serving its editor alone (the baseline); attaching
# to the workspace's daemon is measured by its own benchmarks (bench/attach), below.
export TOOLSD_STANDALONE=1

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)

# gobench NAME BENCHTIME: runs one Go benchmark group of bench/rpc against the built binaries.
gobench() {
	step "Go harness client: $1 ($2)"
	if ! TOOLSD_BIN=$tmp/toolsd ECHO_BIN=$tmp/echo BENCH_OUT=$PWD/$out BIG_BYTES=$BIG_BYTES \
		"$tmp/rpcbench.test" -test.run '^$' -test.bench "^Benchmark$1\$" -test.benchtime "$2" -test.timeout 30m >"$log" 2>&1; then
		cat "$log" >&2
		echo "benchmark $1 failed (its numbers, if any, are still in the table)" >&2
	fi
	grep -E '^Benchmark' "$log" >&2 || true
}

# nodebench NAMES: runs the Node clients' benchmarks NAMES (comma-separated).
nodebench() {
	step "Node clients (vscode-jsonrpc, MCP TypeScript client): $1"
	node bench/rpc/node/bench.mjs --toolsd "$tmp/toolsd" --echo "$tmp/echo" --out "$out" \
		--spawns "$SPAWNS" --calls "$CALLS" --concurrent-calls "$CONC_CALLS" --only "$1" >&2
}

node_only=()
for b in spawn read; do
	want "$b" && node_only+=("$b")
done
if ((${#node_only[@]})); then
	nodebench "$(IFS=,; echo "${node_only[*]}")"
fi
if want concurrent; then
	for ((i = 1; i <= CONC_RUNS; i++)); do
		nodebench concurrent
	done
fi
want spawn && gobench Spawn "${SPAWNS}x"
want read && gobench ReadRoundTrip "${CALLS}x"
if want concurrent; then
	# Each run has every server in turn (go test -count would run one server's repeats in a row).
	for ((i = 1; i <= CONC_RUNS; i++)); do
		gobench Concurrent64 "${CONC_CALLS}x"
	done
fi
want big && gobench BigOutput 1x

if want attach; then
	step "attach (issue 10): toolsd mcp attaching vs a standalone start, reads through the forwarder vs direct (${ATTACH_ITERS}x)"
	go test -c -o "$tmp/attachbench.test" ./bench/attach
	if ! TOOLSD_BIN=$tmp/toolsd "$tmp/attachbench.test" -test.run '^$' -test.bench . -test.benchtime "${ATTACH_ITERS}x" -test.timeout 30m >"$log" 2>&1; then
		cat "$log" >&2
		echo "benchmark attach failed" >&2
	fi
	grep -E '^Benchmark' "$log" | tee "bench/results/$stamp.attach.txt" >&2 || true
fi

took=$(($(date +%s) - start))
cpu=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)
title="toolsd benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores ($cpu); load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg); $(go env GOVERSION), node $(node --version); ${took}s"
"$tmp/report" -title "$title" "$out" | tee "bench/results/$stamp.txt"
echo "raw results: $out" >&2

if [[ $OTHERS == 1 ]]; then
	if [[ -x bench/grep_vs_rg.sh || -f bench/grep_vs_rg.sh ]]; then
		step "bench/grep_vs_rg.sh (owned by another helper)"
		bash bench/grep_vs_rg.sh || echo "bench/grep_vs_rg.sh exited $?" >&2
	fi
	if [[ -d bench/hotreload ]]; then
		step "bench/hotreload (owned by another helper)"
		go test ./bench/hotreload -run '^$' -bench . -benchtime 100x || echo "bench/hotreload exited $?" >&2
	fi
	if [[ -d bench/checkpoint ]]; then
		step "bench/checkpoint (checkpoints on the Go tree, issue 12)"
		go test ./bench/checkpoint -run '^$' -bench . -benchtime 1x -timeout 40m || echo "bench/checkpoint exited $?" >&2
	fi
	if [[ -d bench/hooks ]]; then
		step "bench/hooks (a call with and without hooks, issue 13)"
		go test ./bench/hooks -run '^$' -bench . -benchtime 150x || echo "bench/hooks exited $?" >&2
		go test ./hook -run '^$' -bench BenchmarkBefore || echo "hook's BenchmarkBefore exited $?" >&2
	fi
	if [[ -d bench/acp ]]; then
		step "bench/acp (toolsd acp against a direct connection, issue 28)"
		go test ./bench/acp -run '^$' -bench . -benchtime 2000x || echo "bench/acp exited $?" >&2
	fi
fi
