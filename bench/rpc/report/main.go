// Command report prints the results of bench/run.sh (JSON lines written by the Go and Node
// drivers) as one table per benchmark, side by side with ratios, and checks the bars of
// issue 25: what a person feels, as ratios to server-filesystem measured in the same run,
// and the big output's memory. The echo floor's columns are information, not bars. It exits
// 0 whether or not the bars are met: a miss is a result, not an error.
//
// Usage: report [-title TEXT] RESULTS.jsonl
//
// Package main is a benchmark tool, not part of the daemon.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// record mirrors the JSON lines the drivers write (bench/rpc/bench_test.go, node/bench.mjs).
type record struct {
	Bench       string  `json:"bench"`
	Client      string  `json:"client"`
	Server      string  `json:"server"`
	N           int     `json:"n"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	Callers     int     `json:"callers"`
	CallsPerSec float64 `json:"calls_per_s"`
	RespBytes   int     `json:"resp_bytes"`
	ServerCPUus float64 `json:"server_cpu_us_per_call"`

	OutBytes        int64   `json:"out_bytes"`
	ExecSeconds     float64 `json:"exec_seconds"`
	ReadSeconds     float64 `json:"read_seconds"`
	PeakAnonMiB     float64 `json:"peak_anon_mib"`
	PeakFileMiB     float64 `json:"peak_file_mib"`
	ExecPeakAnonMiB float64 `json:"exec_peak_anon_mib"`
	StoreMapMiBExec float64 `json:"store_map_rss_mib_exec"`
	StoreMapMiBEnd  float64 `json:"store_map_rss_mib_end"`
	Lines           int64   `json:"lines"`
	Bytes           int64   `json:"bytes"`
	ResultBytes     int     `json:"result_bytes"`
	Pages           int     `json:"pages"`
	Truncated       bool    `json:"truncated"`
	OK              *bool   `json:"ok"`
	Problem         string  `json:"problem"`

	// Runs is how many runs of the concurrency benchmark this record's medians are of.
	Runs int `json:"-"`
}

func main() {
	title := flag.String("title", "", "a line printed above the tables (date, machine)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: report [-title TEXT] RESULTS.jsonl")
		os.Exit(2)
	}
	recs, err := load(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
	printReport(os.Stdout, *title, recs)
}

func load(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}

type results []record

// medians folds the runs of the concurrency benchmark for one client and server into one
// record holding the median calls/s and the median CPU per call (each its own median),
// where the last run's record stood. run.sh runs that benchmark three times, each server
// after the other in every round: one run of 20,000 calls is too short to trust alone (the
// echo floor's CPU per call moved between 5.6 and 8.5 µs from run to run in one minute).
func medians(rs results) results {
	type key struct{ client, server string }
	runs := map[key][]record{}
	for _, r := range rs {
		if r.Bench == "concurrent" {
			k := key{r.Client, r.Server}
			runs[k] = append(runs[k], r)
		}
	}
	var out results
	seen := map[key]int{}
	for _, r := range rs {
		if r.Bench != "concurrent" {
			out = append(out, r)
			continue
		}
		k := key{r.Client, r.Server}
		if seen[k]++; seen[k] < len(runs[k]) {
			continue // folded into the last run's place
		}
		m := r
		var rates, cpus []float64
		for _, x := range runs[k] {
			rates = append(rates, x.CallsPerSec)
			if x.ServerCPUus > 0 {
				cpus = append(cpus, x.ServerCPUus)
			}
		}
		m.CallsPerSec, m.ServerCPUus, m.Runs = median(rates), median(cpus), len(runs[k])
		out = append(out, m)
	}
	return out
}

// median is the middle value of xs (the mean of the two middle ones), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

func (rs results) find(bench, client, server string) *record {
	for i := len(rs) - 1; i >= 0; i-- { // the last run wins
		r := &rs[i]
		if r.Bench == bench && r.Client == client && r.Server == server {
			return r
		}
	}
	return nil
}

const (
	goC   = "go-harness"
	nodeC = "node-vscode-jsonrpc"
	mcpC  = "mcp-ts-client"
	sfs   = "server-filesystem"
)

// row is one line of a latency table.
type row struct {
	label         string
	bench, c, srv string
}

func ms(us float64) string {
	switch {
	case us >= 100_000:
		return fmt.Sprintf("%.0f ms", us/1000)
	case us >= 1000:
		return fmt.Sprintf("%.1f ms", us/1000)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	r := a / b
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f×", r)
	case r >= 0.1:
		return fmt.Sprintf("%.2f×", r)
	default:
		return fmt.Sprintf("%.3f×", r)
	}
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "MISSED"
}

type target struct {
	what, measured, verdict string
}

func printReport(w io.Writer, title string, rs results) {
	rs = medians(rs)
	bars := ratioBars(rs)
	if title != "" {
		fmt.Fprintln(w, title)
		fmt.Fprintln(w)
	}
	tw := func() *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight) }

	// 1. Spawn.
	if sf := rs.find("spawn", mcpC, sfs); sf != nil || rs.find("spawn", goC, "toolsd") != nil {
		fmt.Fprintf(w, "1. Spawn to initialize result (%s spawns each, after one unmeasured)\n", nOf(rs, "spawn"))
		t := tw()
		fmt.Fprintln(t, "server\tclient\tp50\tp99\tp50 / server-filesystem p50\tp50 / echo p50 (same client)\t")
		for _, x := range []row{
			{"toolsd (store exists)", "spawn", nodeC, "toolsd"},
			{"toolsd (new store)", "spawn-new-store", nodeC, "toolsd"},
			{"toolsd (store exists)", "spawn", goC, "toolsd"},
			{"echo floor", "spawn", nodeC, "echo"},
			{"echo floor", "spawn", goC, "echo"},
			{"server-filesystem", "spawn", mcpC, sfs},
		} {
			r := rs.find(x.bench, x.c, x.srv)
			if r == nil {
				continue
			}
			var vsSF, vsEcho string = "–", "–"
			if sf != nil {
				vsSF = ratio(r.P50us, sf.P50us)
			}
			if e := rs.find("spawn", x.c, "echo"); e != nil && x.srv != "echo" {
				vsEcho = ratio(r.P50us, e.P50us)
			}
			fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t\n", x.label, x.c, ms(r.P50us), ms(r.P99us), vsSF, vsEcho)
		}
		t.Flush()
		fmt.Fprintln(w)
	}

	// 2. Read round trip.
	if rs.find("read", goC, "toolsd") != nil || rs.find("read", nodeC, "toolsd") != nil {
		fmt.Fprintf(w, "2. Round trip of tools/execute read on a 1 KiB file (%s sequential calls after 200 warm-up calls)\n", nOf(rs, "read"))
		sf := rs.find("read", mcpC, sfs)
		t := tw()
		fmt.Fprintln(t, "server\tclient\tp50\tp99\tresponse bytes\tp50 / echo p50 (same client)\tp50 / server-filesystem p50\t")
		for _, x := range []row{
			{"toolsd read", "read", nodeC, "toolsd"},
			{"toolsd read", "read", goC, "toolsd"},
			{"echo floor (same size)", "read", nodeC, "echo"},
			{"echo floor (same size)", "read", goC, "echo"},
			{"server-filesystem read_text_file", "read", mcpC, sfs},
		} {
			r := rs.find(x.bench, x.c, x.srv)
			if r == nil {
				continue
			}
			vsEcho, vsSF := "–", "–"
			if e := rs.find("read", x.c, "echo"); e != nil && x.srv != "echo" {
				vsEcho = ratio(r.P50us, e.P50us)
			}
			if sf != nil {
				vsSF = ratio(r.P50us, sf.P50us)
			}
			fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t\n", x.label, x.c, ms(r.P50us), ms(r.P99us), r.RespBytes, vsEcho, vsSF)
		}
		t.Flush()
		fmt.Fprintln(w)
	}

	// 3. Concurrency.
	if rs.find("concurrent", goC, "toolsd") != nil || rs.find("concurrent", nodeC, "toolsd") != nil {
		runs := ""
		if n := maxRuns(rs); n > 1 {
			runs = fmt.Sprintf("; medians of %d runs, the servers taking turns", n)
		}
		fmt.Fprintf(w, "3. 64 concurrent callers on one connection: tools/execute read of the 1 KiB file (%s calls%s)\n", nOf(rs, "concurrent"), runs)
		t := tw()
		fmt.Fprintln(t, "server\tclient\tcallers\tcalls/s\tserver CPU per call\tvs echo (same client)\tvs server-filesystem\t")
		sf := rs.find("concurrent", mcpC, sfs)
		for _, x := range []row{
			{"toolsd read", "concurrent", goC, "toolsd"},
			{"toolsd read", "concurrent", nodeC, "toolsd"},
			{"echo floor (same size)", "concurrent", goC, "echo"},
			{"echo floor (same size)", "concurrent", nodeC, "echo"},
			{"server-filesystem read_text_file", "concurrent", mcpC, sfs},
		} {
			r := rs.find(x.bench, x.c, x.srv)
			if r == nil {
				continue
			}
			vsEcho, vsSF := "–", "–"
			if e := rs.find("concurrent", x.c, "echo"); e != nil && x.srv != "echo" {
				vsEcho = ratio(r.CallsPerSec, e.CallsPerSec)
			}
			if sf != nil {
				vsSF = ratio(r.CallsPerSec, sf.CallsPerSec)
			}
			cpu := "–"
			if r.ServerCPUus > 0 {
				cpu = ms(r.ServerCPUus)
			}
			fmt.Fprintf(t, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t\n", x.label, x.c, r.Callers, r.CallsPerSec, cpu, vsEcho, vsSF)
		}
		t.Flush()
		fmt.Fprintln(w)
	}

	// 4. Big output.
	if r := rs.find("big", goC, "toolsd"); r != nil {
		fmt.Fprintf(w, "4. bash printing %s ('x' in lines of 99), then outputs/read of every line\n", size(r.OutBytes))
		t := tw()
		fmt.Fprintln(t, "measure\tvalue\t")
		fmt.Fprintf(t, "tools/execute round trip\t%.1f s\t\n", r.ExecSeconds)
		fmt.Fprintf(t, "result: truncated, output in the result\t%v, %s\t\n", r.Truncated, size(int64(r.ResultBytes)))
		fmt.Fprintf(t, "outputs/read: pages, time\t%d, %.1f s\t\n", r.Pages, r.ReadSeconds)
		fmt.Fprintf(t, "lines and bytes read back (checked line by line)\t%d, %d\t\n", r.Lines, r.Bytes)
		fmt.Fprintf(t, "daemon peak anonymous memory (RssAnon: heap, stacks), whole run\t%.1f MiB\t\n", r.PeakAnonMiB)
		fmt.Fprintf(t, "  RssAnon peak when the result arrived\t%.1f MiB\t\n", r.ExecPeakAnonMiB)
		fmt.Fprintf(t, "daemon peak file-backed memory (RssFile: the binary, bbolt's mmap; droppable)\t%.1f MiB\t\n", r.PeakFileMiB)
		fmt.Fprintf(t, "resident pages of the store file's mmap: when the result arrived, at the end\t%.1f MiB, %.1f MiB\t\n", r.StoreMapMiBExec, r.StoreMapMiBEnd)
		t.Flush()
		checks := r.Problem == "" || strings.HasPrefix(r.Problem, "peak RssAnon")
		if !checks {
			fmt.Fprintf(w, "FAILED CHECK: %s\n", r.Problem)
		}
		bars = append(bars,
			target{"bash " + size(r.OutBytes) + ": truncated result, outputs/read returns every line", fmt.Sprintf("%d lines, %d bytes", r.Lines, r.Bytes), verdict(checks && r.Truncated)},
			target{"bash " + size(r.OutBytes) + ": daemon peak RssAnon ≤ 32 MiB", fmt.Sprintf("%.1f MiB (file-backed %.1f MiB)", r.PeakAnonMiB, r.PeakFileMiB), verdict(r.PeakAnonMiB <= 32)},
		)
		fmt.Fprintln(w)
	} else if rs.find("big", goC, "toolsd") == nil && hasBench(rs, "big") {
		fmt.Fprintln(w, "4. bash big output: no result")
	}

	printTargets(w, "Bars (issue 25: ratios to server-filesystem in this run; the big output's memory)", bars)
}

func printTargets(w io.Writer, heading string, targets []target) {
	if len(targets) == 0 {
		return
	}
	fmt.Fprintln(w, heading)
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, x := range targets {
		fmt.Fprintf(t, "  %s\t%s\t%s\n", x.verdict, x.what, x.measured)
	}
	t.Flush()
}

// Issue 25's bars, ratios to server-filesystem measured in the same run on matching (Node)
// clients: absolute figures drift from machine to machine and with the load of the moment.
// They bar what a person feels (a start, a call, an agent's parallel calls); the echo floor's
// ratios and the CPU per call are printed above as information.
const (
	barSpawnVsSF = 0.05 // spawn to initialize, store exists: at most this × server-filesystem's
	barReadVsSF  = 1.0  // sequential read p50: at most this × server-filesystem's
	barCallsVsSF = 1.0  // 64 callers: calls/s at least this × server-filesystem's
)

// ratioBars checks issue 25's ratio bars against the records of one run.
func ratioBars(rs results) []target {
	var out []target
	if td, sf := rs.find("spawn", nodeC, "toolsd"), rs.find("spawn", mcpC, sfs); td != nil && sf != nil {
		out = append(out, target{fmt.Sprintf("spawn to initialize, store exists (Node clients) ≤ %.2f× server-filesystem's", barSpawnVsSF),
			fmt.Sprintf("%s vs %s = %s", ms(td.P50us), ms(sf.P50us), ratio(td.P50us, sf.P50us)),
			verdict(td.P50us <= barSpawnVsSF*sf.P50us)})
	}
	if td, sf := rs.find("read", nodeC, "toolsd"), rs.find("read", mcpC, sfs); td != nil && sf != nil {
		out = append(out, target{fmt.Sprintf("read p50 (Node clients) ≤ %.1f× server-filesystem's", barReadVsSF),
			fmt.Sprintf("%s vs %s = %s", ms(td.P50us), ms(sf.P50us), ratio(td.P50us, sf.P50us)),
			verdict(td.P50us <= barReadVsSF*sf.P50us)})
	}
	if td, sf := rs.find("concurrent", nodeC, "toolsd"), rs.find("concurrent", mcpC, sfs); td != nil && sf != nil {
		out = append(out, target{fmt.Sprintf("64 callers (%s) ≥ %.1f× server-filesystem's calls/s", nodeC, barCallsVsSF),
			fmt.Sprintf("%.0f vs %.0f calls/s = %s", td.CallsPerSec, sf.CallsPerSec, ratio(td.CallsPerSec, sf.CallsPerSec)),
			verdict(td.CallsPerSec >= barCallsVsSF*sf.CallsPerSec)})
	}
	return out
}

// maxRuns is the most runs a folded concurrency record stands for.
func maxRuns(rs results) int {
	n := 0
	for _, r := range rs {
		n = max(n, r.Runs)
	}
	return n
}

func hasBench(rs results, b string) bool {
	for _, r := range rs {
		if r.Bench == b {
			return true
		}
	}
	return false
}

// nOf describes the sample counts of a benchmark ("2000", or "1000–2000" if they differ).
func nOf(rs results, bench string) string {
	lo, hi := 0, 0
	for _, r := range rs {
		if r.Bench != bench || r.N == 0 {
			continue
		}
		if lo == 0 || r.N < lo {
			lo = r.N
		}
		hi = max(hi, r.N)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
