package session

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/otlptest"
)

func TestMain(m *testing.M) {
	otlptest.MaybeRun()
	goleak.VerifyTestMain(m)
}
