// Command winetool is scripts/wine-test.sh's helper: it writes the stand-in
// bcryptprimitives.dll that lets Go's Windows test binaries start under wine 8 (see package
// wine), and it reads a test binary's run (go tool test2json's events) into one line: ok, or
// the tests that failed, telling apart the failures that are only wine's known limit.
//
// Usage:
//
//	winetool dll PATH            writes the DLL to PATH
//	winetool verdict < EVENTS    prints the package's line; exits 1 when a test really failed
//
// Package main is a developer's test tool, not part of toolsd.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/internal/wine"
)

func main() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == "dll":
		if err := os.WriteFile(os.Args[2], wine.DLL(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "winetool:", err)
			os.Exit(1)
		}
	case len(os.Args) == 2 && os.Args[1] == "verdict":
		line, ok := verdict(os.Stdin)
		fmt.Println(line)
		if !ok {
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: winetool dll PATH | winetool verdict < test2json events")
		os.Exit(2)
	}
}

// wineCleanup is the failure every test with a t.TempDir meets under wine 8: the testing
// package's os.RemoveAll deletes with FileDispositionInformationEx, which wine does not
// implement (STATUS_NOT_IMPLEMENTED, shown as "Invalid function"), and Go falls back to the
// older call only on the statuses Windows gives.
func wineCleanup(line string) bool {
	return strings.Contains(line, "TempDir RemoveAll cleanup: ") && strings.HasSuffix(line, "Invalid function.")
}

type event struct {
	Action string
	Test   string
	Output string
}

// verdict reads a package's test2json events into its line: ok unless a test failed or the
// binary failed outside any test. A failed test (one with output of its own; a parent that
// failed by its subtests is not counted twice) is wine's when all it says is t.TempDir's
// cleanup error or a skip under wine; real when it does not say the cleanup error; and
// unsure when it says both the cleanup error and something else (a skip for a reason that is
// not wine's, or a real failure: the log tells).
func verdict(r io.Reader) (line string, ok bool) {
	out := map[string][]string{} // a test's output lines
	var failed, unsure, wineOnly, skipped []string
	pkgFailed, pkgPassed := false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a line the binary wrote past test2json
		}
		switch {
		case e.Action == "output":
			out[e.Test] = append(out[e.Test], strings.TrimSpace(e.Output))
		case e.Action == "skip" && e.Test != "":
			skipped = append(skipped, e.Test)
		case e.Action == "fail" && e.Test == "":
			pkgFailed = true
		case e.Action == "pass" && e.Test == "":
			pkgPassed = true
		case e.Action == "fail":
			cleanup, other := false, false
			for _, l := range out[e.Test] {
				switch {
				case l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- "):
				case wineCleanup(l):
					cleanup = true
				case !strings.Contains(l, wine.SkipPrefix):
					other = true
				}
			}
			switch {
			case other && !cleanup:
				failed = append(failed, e.Test)
			case other:
				unsure = append(unsure, e.Test)
			case cleanup:
				wineOnly = append(wineOnly, e.Test)
			} // else it failed by its subtests, which are counted themselves
		}
	}
	var notes []string
	if len(skipped) > 0 {
		notes = append(notes, fmt.Sprintf("%d skipped", len(skipped)))
	}
	if len(wineOnly) > 0 {
		notes = append(notes, fmt.Sprintf("%d failed only in t.TempDir's cleanup, which wine cannot do (FileDispositionInformationEx)", len(wineOnly)))
	}
	if len(unsure) > 0 {
		slices.Sort(unsure)
		notes = append(notes, "failed in the cleanup after saying something, see the log: "+strings.Join(unsure, " "))
	}
	note := ""
	if len(notes) > 0 {
		note = " (" + strings.Join(notes, "; ") + ")"
	}
	switch {
	case len(failed) > 0:
		slices.Sort(failed)
		return "FAIL " + strings.Join(failed, " ") + note, false
	case len(unsure) > 0:
		return "UNSURE" + note, false
	case pkgFailed && len(wineOnly) == 0, !pkgFailed && !pkgPassed:
		return "FAIL outside any test (see the log)" + note, false
	}
	return "ok" + note, true
}
