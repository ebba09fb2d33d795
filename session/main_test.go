package session

import (
	"os"
	"testing"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/otlptest"
)

// The test binary is also the guard and the sandbox's stage, for the tests that confine.
func TestMain(m *testing.M) {
	otlptest.MaybeRun()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case proc.GuardArg:
			os.Exit(proc.RunGuard(os.Args[2:]))
		case sandbox.StageArg:
			os.Exit(sandbox.RunStage(os.Args[2:]))
		}
	}
	goleak.VerifyTestMain(m)
}
