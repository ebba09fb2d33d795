package main

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"
)

// guardName is the lean binary that runs the guard and the sandbox stage of every tool
// process (cmd/toolsd-guard), looked for next to toolsd's own executable.
const guardName = "toolsd-guard"

// guardFor returns the executable that runs the guards and sandbox stages of the toolsd
// binary at exe: toolsd-guard next to it when that was built from the same sources, else exe
// itself (a `go install …/cmd/toolsd` alone, or a helper left from another build).
func guardFor(exe string) string {
	name := guardName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	helper := filepath.Join(filepath.Dir(exe), name)
	hi, err := os.Stat(helper)
	if err != nil || !hi.Mode().IsRegular() || runtime.GOOS != "windows" && hi.Mode().Perm()&0o111 == 0 {
		return exe
	}
	ei, err := os.Stat(exe)
	if err != nil {
		return exe
	}
	own, ok := debug.ReadBuildInfo()
	if !ok {
		return exe
	}
	theirs, err := buildinfo.ReadFile(helper)
	if err != nil || !sameBuild(own, theirs, ei.ModTime().Sub(hi.ModTime())) {
		return exe
	}
	return helper
}

// buildSkew is how far apart two binaries of a build from a modified tree may have been
// written and still count as one build.
const buildSkew = time.Minute

// sameBuild reports whether the helper described by theirs was built from the same sources
// as this program (own): the same toolchain, module version and revision, and every module
// it links at the version this program links. A build from a modified tree cannot say which
// modification it saw, so there the two must also have been written within buildSkew of
// each other (skew is the daemon's modification time minus the helper's), as one `go build`
// of both writes them.
func sameBuild(own, theirs *debug.BuildInfo, skew time.Duration) bool {
	if own.GoVersion != theirs.GoVersion || own.Main.Path != theirs.Main.Path || own.Main.Version != theirs.Main.Version || own.Main.Sum != theirs.Main.Sum {
		return false
	}
	deps := make(map[string]debug.Module, len(own.Deps))
	for _, m := range own.Deps {
		deps[m.Path] = *m
	}
	for _, m := range theirs.Deps {
		if d, ok := deps[m.Path]; !ok || d.Version != m.Version || d.Sum != m.Sum || (d.Replace == nil) != (m.Replace == nil) {
			return false
		}
	}
	settings := func(bi *debug.BuildInfo) map[string]string {
		s := map[string]string{}
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision", "vcs.time", "vcs.modified", "-tags", "GOOS", "GOARCH":
				s[kv.Key] = kv.Value
			}
		}
		return s
	}
	a, b := settings(own), settings(theirs)
	for _, k := range []string{"vcs.revision", "vcs.time", "vcs.modified", "-tags", "GOOS", "GOARCH"} {
		if a[k] != b[k] {
			return false
		}
	}
	modified := a["vcs.modified"] == "true" || (a["vcs.revision"] == "" && own.Main.Sum == "")
	return !modified || skew.Abs() <= buildSkew
}
