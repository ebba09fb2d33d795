//go:build !linux

package proc

import (
	"os"
	"os/exec"
)

// Guards are started ahead of their commands on Linux only (warm_linux.go): elsewhere every
// command starts the usual way, and these are what Run and the guard see of it.

// WarmRuns is how many commands ran through a guard started ahead of them: none here.
func WarmRuns() int64 { return 0 }

// SetWarm does nothing here: no guard is started ahead.
func SetWarm(bool) {}

// DropWarm does nothing here: no guard waits ahead.
func DropWarm() {}

type warmGuard struct{}

func warmKey(*exec.Cmd, any) string { return "" }

func takeWarm(string) *warmGuard { return nil }

func refill(string, *exec.Cmd) {}

func runWarmed(*warmGuard, *exec.Cmd, *launch, string) (cut bool, err error, ran bool) {
	return false, nil, false
}

// runWarm is the guard's main for a guard started ahead, which is never started here.
func runWarm(guardOptions, <-chan os.Signal, <-chan os.Signal) int {
	os.Stderr.WriteString("toolsd guard: -warm is not supported on this system\n")
	return 2
}
