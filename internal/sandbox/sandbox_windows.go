package sandbox

import (
	"errors"
	"fmt"
	"os"
)

// ErrUnavailable is the error of Start on a system whose processes toolsd cannot confine.
var ErrUnavailable = errors.New("sandbox: no OS sandbox on Windows yet; commands run unconfined and ask as without a sandbox")

// Probe reports that Windows offers toolsd no sandbox yet: Support is empty, Available
// false, so no process is confined and nothing is allowed because of a sandbox.
func Probe(exe string) Support { return Support{} }

// ProbeNamespaces reports that Windows has no namespaces.
func ProbeNamespaces(exe string) (bool, string) { return false, "Windows has none" }

// AppArmorRestrictsUserns is false: AppArmor is Linux's.
func AppArmorRestrictsUserns() bool { return false }

// AppArmorFix is empty: AppArmor is Linux's.
func AppArmorFix(exes ...string) string { return "" }

// Describe is Support in words, one line per fact, as `toolsd sandbox check` prints it: what
// holds on Windows and what does not.
func (s Support) Describe() []string {
	return []string{
		"sandbox: unavailable on Windows (no OS sandbox yet): tool processes run unconfined, nothing is allowed because of a sandbox, and every command asks as with the sandbox off",
		"process trees: each tool runs in a Job Object that kills its whole tree on time-out, cancel and when the daemon dies (the job closes with it)",
		"paths: opened handle by handle from the workspace's root, refusing a symbolic link, junction or other reparse point at every step",
	}
}

// Start fails: Windows has no sandbox yet (ErrUnavailable).
func Start(p *Policy, argv []string, stdin, stdout, stderr *os.File) (pid int, mode string, err error) {
	return 0, "", ErrUnavailable
}

// RunStage fails: Windows has no sandbox stage.
func RunStage(args []string) int {
	fmt.Fprintln(os.Stderr, "toolsd:", ErrUnavailable)
	return 126
}
