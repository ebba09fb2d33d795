// Command grepbench runs one of toolsd's built-in tools (grep, glob, read or edit) over a
// folder and prints what it found, for bench/grep_vs_rg.sh to time against ripgrep, tail
// and sed. It calls the tools' Execute directly, with every permission granted.
//
// Package main is a benchmark driver, not part of the daemon.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/registry"
)

func main() {
	mode := flag.String("mode", "grep", "grep, glob, read, edit, or gen (write a test file)")
	root := flag.String("root", ".", "the folder to search (the workspace)")
	pattern := flag.String("pattern", "", "the regex (grep) or glob (glob)")
	include := flag.String("include", "", "grep's include glob")
	file := flag.String("file", "", "read/edit/gen: the file, relative to root")
	lines := flag.Int("lines", 100, "read: how many lines to read")
	offset := flag.Int("offset", 1, "read: the line to start at")
	repeat := flag.Int("repeat", 1, "read: reads in one process (the second and later use the line index)")
	old := flag.String("old", "", "edit: oldString")
	new := flag.String("new", "", "edit: newString")
	size := flag.Int64("size", 1<<30, "gen: bytes to write")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	memprofile := flag.String("memprofile", "", "write an allocation profile here (every allocation sampled)")
	limit := flag.Int("limit", 0, "grep, glob: the tools' SearchLimit (0: the default)")
	print := flag.Bool("print", false, "grep, glob: print the tool's output after the count")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fail(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 1
		defer func() {
			f, err := os.Create(*memprofile)
			if err != nil {
				fail(err)
			}
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}()
	}
	ws, err := filepath.Abs(*root)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		fail(err)
	}
	if *mode == "gen" {
		n := gen(filepath.Join(ws, *file), *size)
		fmt.Println(n)
		return
	}
	tools := map[string]*registry.Tool{}
	for _, t := range builtin.Tools(&builtin.Options{SearchLimit: *limit}) {
		tools[t.ID] = t
	}
	call := &registry.Call{
		Workspace: ws,
		Ask:       func(context.Context, registry.AskRequest) error { return nil },
		Progress:  func(string, map[string]any) {},
	}
	run := func(tool string, args map[string]any) *registry.Result {
		raw, _ := json.Marshal(args)
		res, err := tools[tool].Execute(context.Background(), call, raw)
		if err != nil {
			pprof.StopCPUProfile()
			fail(err)
		}
		return res
	}
	switch *mode {
	case "grep":
		args := map[string]any{"pattern": *pattern}
		if *include != "" {
			args["include"] = *include
		}
		res := run("grep", args)
		fmt.Println(res.Metadata["matches"])
		if *print {
			fmt.Println(res.Output)
		}
	case "glob":
		res := run("glob", map[string]any{"pattern": *pattern})
		fmt.Println(res.Metadata["count"])
		if *print {
			fmt.Println(res.Output)
		}
	case "read":
		// offset is the line to start at (the script counts the lines with wc -l); every
		// read after the first in one process goes through the line index.
		for i := range *repeat {
			start := time.Now()
			res := run("read", map[string]any{"filePath": *file, "offset": *offset, "limit": *lines})
			if *repeat > 1 {
				fmt.Fprintf(os.Stderr, "read %d: %.2f ms\n", i+1, float64(time.Since(start).Microseconds())/1000)
			}
			if i == *repeat-1 {
				fmt.Println(res.Metadata["lines"])
			}
		}
	case "edit":
		res := run("edit", map[string]any{"filePath": *file, "oldString": *old, "newString": *new})
		fmt.Println(res.Metadata["replacements"])
	default:
		fail(fmt.Errorf("unknown mode %q", *mode))
	}
}

// gen writes a log-like text file of about size bytes and returns its line count.
func gen(path string, size int64) int {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
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
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
	return lines
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
