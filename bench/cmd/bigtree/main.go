// Command bigtree writes the generated 100,000-file tree of bench/bigtree into a folder:
//
//	go run ./bench/cmd/bigtree DIR
//
// Package main is a benchmark tool, not part of the daemon.
package main

import (
	"fmt"
	"os"

	"github.com/toolsd/toolsd/bench/bigtree"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bigtree DIR")
		os.Exit(2)
	}
	if err := bigtree.Make(os.Args[1], bigtree.Default); err != nil {
		fmt.Fprintln(os.Stderr, "bigtree:", err)
		os.Exit(1)
	}
}
