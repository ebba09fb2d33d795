package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// macOS keeps more secrets in the home folder than the tools' own files: the keychains and
// the cookies of the system's web views. The profile already refuses the Mach services of
// the security server (so the keychain's API); these make its files unreadable too.
func init() {
	DefaultDeny = append(DefaultDeny, "~/Library/Keychains", "~/Library/Cookies")
}

// Probe finds what macOS offers: Seatbelt, when sandbox-exec is there. exe is not used (the
// namespace probe is Linux's).
func Probe(exe string) Support {
	fi, err := os.Stat(SeatbeltExec)
	return Support{Seatbelt: err == nil && fi.Mode().IsRegular()}
}

// ProbeNamespaces reports that macOS has no namespaces.
func ProbeNamespaces(exe string) (bool, string) { return false, "macOS has none" }

// AppArmorRestrictsUserns is false: AppArmor is Linux's.
func AppArmorRestrictsUserns() bool { return false }

// AppArmorFix is empty: AppArmor is Linux's.
func AppArmorFix(exes ...string) string { return "" }

// Describe is Support in words, one line per fact, as `toolsd sandbox check` prints it: what
// holds on macOS and what does not.
func (s Support) Describe() []string {
	if !s.Seatbelt {
		return []string{"Seatbelt: " + SeatbeltExec + " is missing; tool processes run unconfined and every command asks as without a sandbox"}
	}
	return []string{
		"Seatbelt: yes (" + SeatbeltExec + " with a profile generated from the policy below): reads all but the hidden paths, writes only the writable folders, the git folders and protected settings read-only, no network but the egress proxy's loopback port, no Unix sockets, signals only within the tool's tree",
		"process trees: each tool leads a process group its guard kills whole on time-out, cancel and when the daemon dies (the guard watches it); a process that leaves the group (setsid) and whose parent ends is not found again",
		"not on macOS: a loopback of the tool's own (test servers on 127.0.0.1 cannot be reached or started), a bound on the processes counted by the kernel (the guard counts the tree every 20 ms instead)",
	}
}

// Start starts argv confined by p with the given standard streams, leading a process group
// of its own: sandbox-exec applies the profile generated from p (SeatbeltProfile) and execs
// argv, which, with everything it starts, stays confined. It returns the tool's pid and
// ModeSeatbelt; an error wrapping exec.ErrNotFound when argv[0] does not exist; any other
// error means the command did not run, never that it runs unconfined.
func Start(p *Policy, argv []string, stdin, stdout, stderr *os.File) (pid int, mode string, err error) {
	profile, err := SeatbeltProfile(p)
	if err != nil {
		return 0, "", err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", argv[0], exec.ErrNotFound)
	}
	if _, err := os.Stat(SeatbeltExec); err != nil {
		return 0, "", fmt.Errorf("sandbox: %s: %w", SeatbeltExec, err)
	}
	cmd := exec.Command(SeatbeltExec, append([]string{"-p", profile, path}, argv[1:]...)...)
	cmd.Env = append(os.Environ(), p.Env...)
	if p.Net.Mode == NetProxy {
		cmd.Env = append(cmd.Env, ProxyEnv(p.Net.Proxy)...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := closeOnExecFrom(3); err != nil {
		return 0, "", fmt.Errorf("sandbox: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return 0, "", fmt.Errorf("sandbox: starting %s: %w", SeatbeltExec, err)
	}
	return cmd.Process.Pid, ModeSeatbelt, nil
}

// RunStage is Linux's stage; macOS confines through sandbox-exec (Start) and has none.
func RunStage(args []string) int {
	fmt.Fprintln(os.Stderr, "toolsd: "+StageArg+": no sandbox stage on macOS (Seatbelt confines through "+SeatbeltExec+")")
	return 126
}
