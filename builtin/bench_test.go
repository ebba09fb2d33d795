package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolsd/toolsd/registry"
)

// benchCall is a call that allows everything and discards output.
func benchCall(ws string) *registry.Call {
	return &registry.Call{
		Workspace: ws,
		Ask:       func(context.Context, registry.AskRequest) error { return nil },
		Progress:  func(string, map[string]any) {},
	}
}

func benchTool(b *testing.B, id string) *registry.Tool {
	for _, t := range Tools(nil) {
		if t.ID == id {
			return t
		}
	}
	b.Fatalf("no tool %s", id)
	return nil
}

var (
	bigFileOnce sync.Map // size -> path

	benchDirsMu sync.Mutex // guards benchDirs
	benchDirs   []string
)

// removeBenchFiles removes the big files the benchmarks wrote (TestMain calls it).
func removeBenchFiles() {
	benchDirsMu.Lock()
	defer benchDirsMu.Unlock()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
}

// bigFile writes (once per process) a text file of about size bytes with numbered lines
// and returns its path and line count.
func bigFile(b *testing.B, size int64) (string, int) {
	type entry struct {
		path  string
		lines int
	}
	if v, ok := bigFileOnce.Load(size); ok {
		e := v.(entry)
		return e.path, e.lines
	}
	dir, err := os.MkdirTemp("", "toolsd-bench-")
	if err != nil {
		b.Fatal(err)
	}
	benchDirsMu.Lock()
	benchDirs = append(benchDirs, dir)
	benchDirsMu.Unlock()
	p := filepath.Join(dir, "big.log")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	lines := 0
	for n < size {
		lines++
		k, _ := fmt.Fprintf(w, "%09d 2026-11-30T01:00:00Z INFO request handled path=/api/v1/items/%d status=200 bytes=%d\n", lines, lines%977, lines*7%65536)
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	bigFileOnce.Store(size, entry{p, lines})
	return p, lines
}

func benchReadTail(b *testing.B, size int64) {
	p, lines := bigFile(b, size)
	tool := benchTool(b, "read")
	call := benchCall(filepath.Dir(p))
	args, _ := json.Marshal(map[string]any{"filePath": "big.log", "offset": lines - 99, "limit": 100})
	run := func(b *testing.B, cold bool) {
		b.SetBytes(size)
		for b.Loop() {
			if cold {
				lineIndexes.mu.Lock()
				delete(lineIndexes.m, p)
				lineIndexes.mu.Unlock()
			}
			res, err := tool.Execute(context.Background(), call, args)
			if err != nil {
				b.Fatal(err)
			}
			if res.Metadata["lines"] != 100 {
				b.Fatalf("lines %v", res.Metadata["lines"])
			}
		}
	}
	// cold: the first read of the file (one pass counting newlines); indexed: a later read
	// of the unchanged file, through the line index the first one left.
	b.Run("cold", func(b *testing.B) { run(b, true) })
	b.Run("indexed", func(b *testing.B) { run(b, false) })
}

// BenchmarkReadTail256MiB reads the last 100 lines of a 256 MiB file.
func BenchmarkReadTail256MiB(b *testing.B) { benchReadTail(b, 256<<20) }

// BenchmarkReadTail1GiB reads the last 100 lines of a 1 GiB file (TOOLSD_BENCH_1GIB=1).
func BenchmarkReadTail1GiB(b *testing.B) {
	if os.Getenv("TOOLSD_BENCH_1GIB") == "" {
		b.Skip("set TOOLSD_BENCH_1GIB=1 to write and read a 1 GiB file")
	}
	benchReadTail(b, 1<<30)
}

// BenchmarkEdit10MiB replaces one unique line in the middle of a 10 MiB file: read,
// match, diff, atomic write.
func BenchmarkEdit10MiB(b *testing.B) {
	p, lines := bigFile(b, 10<<20)
	ws := b.TempDir()
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(ws, "big.log")
	if err := os.WriteFile(target, data, 0o644); err != nil {
		b.Fatal(err)
	}
	mid := fmt.Sprintf("%09d 2026-11-30T01:00:00Z", lines/2)
	tool := benchTool(b, "edit")
	call := benchCall(ws)
	from, to := mid, strings.Replace(mid, "2026", "2027", 1)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		args, _ := json.Marshal(map[string]any{"filePath": "big.log", "oldString": from, "newString": to})
		if _, err := tool.Execute(context.Background(), call, args); err != nil {
			b.Fatal(err)
		}
		from, to = to, from
	}
}

func goroot(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("no go command")
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

// BenchmarkGrepGoroot greps the Go source tree for a literal and for a regex without one.
func BenchmarkGrepGoroot(b *testing.B) {
	root := goroot(b)
	tool := benchTool(b, "grep")
	call := benchCall(root)
	for _, pat := range []string{`func \(`, `errors\.New\("[a-z]+ closed`, `[A-Z]{12}`} {
		b.Run(pat, func(b *testing.B) {
			args, _ := json.Marshal(map[string]any{"pattern": pat})
			for b.Loop() {
				if _, err := tool.Execute(context.Background(), call, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGlobGoroot globs the Go source tree.
func BenchmarkGlobGoroot(b *testing.B) {
	root := goroot(b)
	tool := benchTool(b, "glob")
	call := benchCall(root)
	for _, pat := range []string{"*.go", "**/testdata/**"} {
		b.Run(pat, func(b *testing.B) {
			args, _ := json.Marshal(map[string]any{"pattern": pat})
			for b.Loop() {
				if _, err := tool.Execute(context.Background(), call, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
