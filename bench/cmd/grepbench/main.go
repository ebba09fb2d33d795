// Command grepbench runs toolsd's built-in grep or glob once over a folder and prints the
// number of matches, for bench/grep_vs_rg.sh to time against ripgrep.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/registry"
)

func main() {
	mode := flag.String("mode", "grep", "grep or glob")
	root := flag.String("root", ".", "the folder to search (the workspace)")
	pattern := flag.String("pattern", "", "the regex (grep) or glob (glob)")
	include := flag.String("include", "", "grep's include glob")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ws, err := filepath.Abs(*root)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tools := map[string]*registry.Tool{}
	for _, t := range builtin.Tools(nil) {
		tools[t.ID] = t
	}
	args := map[string]any{"pattern": *pattern}
	if *include != "" {
		args["include"] = *include
	}
	raw, _ := json.Marshal(args)
	call := &registry.Call{
		Workspace: ws,
		Ask:       func(context.Context, registry.AskRequest) error { return nil },
		Progress:  func(string, map[string]any) {},
	}
	res, err := tools[*mode].Execute(context.Background(), call, raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	switch *mode {
	case "grep":
		fmt.Println(res.Metadata["matches"])
	case "glob":
		fmt.Println(res.Metadata["count"])
	}
}
