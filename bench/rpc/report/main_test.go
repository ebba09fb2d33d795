package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const fixture = `{"bench":"spawn","client":"node-vscode-jsonrpc","server":"toolsd","n":30,"p50_us":9000,"p99_us":20000}
{"bench":"spawn","client":"node-vscode-jsonrpc","server":"echo","n":30,"p50_us":3000,"p99_us":5000}
{"bench":"spawn","client":"mcp-ts-client","server":"server-filesystem","n":30,"p50_us":150000,"p99_us":300000}
{"bench":"read","client":"node-vscode-jsonrpc","server":"toolsd","n":2000,"p50_us":1000,"p99_us":8000,"resp_bytes":1449}
{"bench":"read","client":"node-vscode-jsonrpc","server":"echo","n":2000,"p50_us":30,"p99_us":500,"resp_bytes":1449}
{"bench":"read","client":"mcp-ts-client","server":"server-filesystem","n":2000,"p50_us":250,"p99_us":4000,"resp_bytes":2154}
{"bench":"concurrent","client":"go-harness","server":"toolsd","n":20000,"callers":64,"calls_per_s":12000,"server_cpu_us_per_call":150}
{"bench":"concurrent","client":"node-vscode-jsonrpc","server":"toolsd","n":20000,"callers":64,"calls_per_s":1500,"server_cpu_us_per_call":200}
{"bench":"concurrent","client":"node-vscode-jsonrpc","server":"echo","n":20000,"callers":64,"calls_per_s":40000,"server_cpu_us_per_call":10}
{"bench":"concurrent","client":"go-harness","server":"echo","n":20000,"callers":64,"calls_per_s":20000,"server_cpu_us_per_call":20}
{"bench":"concurrent","client":"mcp-ts-client","server":"server-filesystem","n":20000,"callers":64,"calls_per_s":1000,"server_cpu_us_per_call":100}
{"bench":"big","client":"go-harness","server":"toolsd","out_bytes":1073741824,"peak_anon_mib":30,"peak_file_mib":40,"lines":10845878,"bytes":1084587701,"truncated":true,"ok":true}
`

func TestReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	printReport(&buf, "title", recs)
	out := buf.String()
	for _, tc := range []struct{ name, re string }{
		{"spawn ratio missed at 0.06", `MISSED +spawn to initialize, store exists \(Node clients\) ≤ 0\.05× server-filesystem's +9\.0 ms vs 150 ms = 0\.060×`},
		{"read p50 four times slower is missed", `MISSED +read p50 \(Node clients\) ≤ 1\.0× server-filesystem's +1\.0 ms vs 250 µs = 4\.00×`},
		{"callers met at 1.5", `MET +64 callers \(node-vscode-jsonrpc\) ≥ 1\.0× server-filesystem's calls/s +1500 vs 1000 calls/s = 1\.50×`},
		{"big output checks met", `MET +bash 1 GiB: truncated result, outputs/read returns every line`},
		{"big output RssAnon met", `MET +bash 1 GiB: daemon peak RssAnon ≤ 32 MiB +30\.0 MiB \(file-backed 40\.0 MiB\)`},
		{"server CPU per call", `toolsd read +go-harness +64 +12000 +150 µs`},
		{"read vs echo ratio", `toolsd read +node-vscode-jsonrpc +1\.0 ms +8\.0 ms +1449 +33×`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !regexp.MustCompile(tc.re).MatchString(out) {
				t.Fatalf("no line matches %q in:\n%s", tc.re, out)
			}
		})
	}
	for _, retired := range []string{"echo floor's calls/s", "CPU per call guard", "10,000 calls/s"} {
		if strings.Contains(out, retired) {
			t.Errorf("a retired bar is still checked (%q):\n%s", retired, out)
		}
	}
	if !strings.HasPrefix(out, "title\n") {
		t.Fatalf("the title does not come first:\n%s", out)
	}
}

func TestLoadNamesTheBadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte("{\"bench\":\"spawn\"}\n\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := load(path)
	if err == nil || !strings.Contains(err.Error(), "r.jsonl:3:") {
		t.Fatalf("load: got %v, want an error naming line 3", err)
	}
}

// TestMedians: repeated runs of the concurrency benchmark are folded into their medians, each
// metric its own, and the other benchmarks are left as they are.
func TestMedians(t *testing.T) {
	rs := results{
		{Bench: "concurrent", Client: goC, Server: "toolsd", CallsPerSec: 100, ServerCPUus: 50},
		{Bench: "concurrent", Client: goC, Server: "echo", CallsPerSec: 300, ServerCPUus: 8.5},
		{Bench: "spawn", Client: nodeC, Server: "toolsd", P50us: 4000},
		{Bench: "concurrent", Client: goC, Server: "toolsd", CallsPerSec: 120, ServerCPUus: 46},
		{Bench: "concurrent", Client: goC, Server: "echo", CallsPerSec: 320, ServerCPUus: 5.6},
		{Bench: "concurrent", Client: goC, Server: "toolsd", CallsPerSec: 90, ServerCPUus: 48},
		{Bench: "concurrent", Client: goC, Server: "echo", CallsPerSec: 310, ServerCPUus: 6.1},
		{Bench: "concurrent", Client: nodeC, Server: "toolsd", CallsPerSec: 200, ServerCPUus: 40},
	}
	got := medians(rs)
	want := results{
		{Bench: "spawn", Client: nodeC, Server: "toolsd", P50us: 4000},
		{Bench: "concurrent", Client: goC, Server: "toolsd", CallsPerSec: 100, ServerCPUus: 48, Runs: 3},
		{Bench: "concurrent", Client: goC, Server: "echo", CallsPerSec: 310, ServerCPUus: 6.1, Runs: 3},
		{Bench: "concurrent", Client: nodeC, Server: "toolsd", CallsPerSec: 200, ServerCPUus: 40, Runs: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("medians:\n got %+v\nwant %+v", got, want)
	}
	var buf bytes.Buffer
	printReport(&buf, "", rs)
	if !strings.Contains(buf.String(), "medians of 3 runs") || !regexp.MustCompile(`toolsd read +go-harness +0 +100 +48 µs +0\.32×`).MatchString(buf.String()) {
		t.Fatalf("the report does not use the medians:\n%s", buf.String())
	}
}
