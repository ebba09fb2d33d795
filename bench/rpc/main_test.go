package rpcbench

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		for _, d := range tempDirs {
			_ = os.RemoveAll(d)
		}
	}))
}
