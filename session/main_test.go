package session

import (
	"testing"

	"github.com/toolsd/toolsd/internal/proc"
	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/otlptest"
)

// The test binary is also the guard and the sandbox's stage, for the tests that confine.
func TestMain(m *testing.M) {
	otlptest.MaybeRun()
	proc.MaybeRunHelper()
	goleak.VerifyTestMain(m)
}
