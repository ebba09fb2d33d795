package session

import (
	"fmt"
	"os"
	"testing"

	"github.com/toolsd/toolsd/internal/proc"
	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/otlptest"
)

// The test binary is also the guard and the sandbox's stage, for the tests that confine.
func TestMain(m *testing.M) {
	otlptest.MaybeRun()
	proc.MaybeRunHelper()
	// The sandbox makes a build cache per workspace it opens: the suite's go to a folder of
	// its own, not to the user's cache.
	cache, err := os.MkdirTemp("", "toolsd-session-cache-")
	if err != nil {
		panic(err)
	}
	_ = os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	_ = os.RemoveAll(cache)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: goroutines left: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
