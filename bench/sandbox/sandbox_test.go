// Package sandbox measures what the sandbox costs per spawned command, side by side with a
// plain guarded spawn in one run: go test -run '^$' -bench . ./bench/sandbox.
package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
)

// The test binary is the guard and the stage.
func TestMain(m *testing.M) {
	proc.MaybeRunHelper()
	os.Exit(m.Run())
}

// BenchmarkSpawn runs /bin/true through the guard unconfined, confined with namespaces, and
// confined by Landlock alone, and reports each one's p50 (goal: the sandbox adds at most
// 5 ms p50 over the plain guarded spawn). The guard and the stage are the toolsd binary
// (TOOLSD_BIN, else built), toolsd-guard beside it when there is one, as for a bash call,
// and this test binary: the differences are what each binary's start costs.
func BenchmarkSpawn(b *testing.B) {
	if !sandbox.Probe("").Available() {
		b.Skip("the kernel offers no Landlock")
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := os.Getenv("TOOLSD_BIN")
	if bin == "" {
		bin = harness.Binary(b)
	}
	defer proc.SetGuardPath("")
	guards := []struct{ name, path string }{{"toolsd", bin}, {"testbin", exe}}
	if helper := filepath.Join(filepath.Dir(bin), "toolsd-guard"); fileExists(helper) {
		guards = append(guards, struct{ name, path string }{"toolsd-guard", helper})
	}
	for _, g := range guards {
		b.Run(g.name, func(b *testing.B) {
			proc.SetGuardPath(g.path)
			spawn(b)
		})
	}
}

func spawn(b *testing.B) {
	ws := b.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		b.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	// The tool's temp folder is one of its own, as TMPDIR usually names a folder apart from
	// the workspace: a workspace inside the temp folder would make Landlock alone list and
	// grant every entry of that folder around the workspace's protected paths.
	tmp := b.TempDir()
	policy := func(landlockOnly bool) *sandbox.Policy {
		p := sandbox.Build(sandbox.Options{Workspace: ws, Home: home, TempDir: tmp})
		p.LandlockOnly = landlockOnly
		return p
	}
	for _, c := range []struct {
		name   string
		policy *sandbox.Policy
	}{{"guard", nil}, {"confined-namespaces", policy(false)}, {"confined-landlock", policy(true)}} {
		b.Run(c.name, func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				cmd := proc.Command(context.Background(), time.Second, "/bin/true")
				cmd.Dir = ws
				if c.policy != nil {
					if err := proc.Confine(cmd, c.policy); err != nil {
						b.Fatal(err)
					}
				}
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if _, err := proc.Run(cmd); err != nil {
					b.Fatalf("%v: %s", err, out.String())
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
