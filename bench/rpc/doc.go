// Package rpcbench measures toolsd over real pipes from the Go harness client, side by side
// with a JSON-RPC echo of the same size (the floor); bench/run.sh runs it together with the
// Node drivers and prints one table.
//
// The benchmarks read TOOLSD_BIN and ECHO_BIN (binaries to drive; built here when unset),
// BENCH_OUT (a file to which each benchmark appends one JSON line with its numbers) and
// BIG_BYTES (the size of BenchmarkBigOutput's output, default 1 GiB). Run them one group at
// a time with an exact count, as bench/run.sh does:
//
//	go test -run '^$' -bench 'Spawn' -benchtime 30x ./bench/rpc/
//	go test -run '^$' -bench 'ReadRoundTrip' -benchtime 2000x ./bench/rpc/
//	go test -run '^$' -bench 'Concurrent64' -benchtime 20000x ./bench/rpc/
//	go test -run '^$' -bench 'BigOutput' -benchtime 1x -timeout 20m ./bench/rpc/
package rpcbench
