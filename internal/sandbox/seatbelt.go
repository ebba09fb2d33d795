package sandbox

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// SeatbeltExec is macOS's sandbox-exec, by its absolute path (never looked up in PATH): it
// applies a profile to itself and execs the command, which, with everything it starts,
// inherits the profile.
const SeatbeltExec = "/usr/bin/sandbox-exec"

// seatbeltDevices are the devices a confined process may read and write, as on Linux
// (devices): reading any other device (a disk's) is refused. /dev/fd is the process's own
// descriptors (bash's process substitution); /dev/stdin, /dev/stdout and /dev/stderr lead there.
var seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"}

// SeatbeltProfile is p as a Seatbelt profile (SBPL), for `sandbox-exec -p`. It is plain
// text built from the policy alone, the same on every system, so its tests run anywhere.
//
// Everything is denied but what the profile allows: running and forking (the children
// inherit the profile), signals and process information only within the sandbox, what
// ordinary programs ask of the system (sysctls and the host's processor information, which
// Node's os.cpus() reads, preferences, user lookups, certificate trust, POSIX semaphores and
// shared memory, pseudo-terminals), reading p.Read and writing p.Write. Then, later in the
// profile so that they win over those allows, the denials: /dev but the usual devices,
// writes to p.Protect and p.Watch (which Linux can only move aside after the command),
// reads and writes of p.Deny. The network: none (NetNone), only the
// proxy's loopback port (NetProxy), or all (NetDirect); Unix sockets only with
// p.UnixSockets. What Seatbelt cannot express (a bound on the processes) the guard does.
func SeatbeltProfile(p *Policy) (string, error) {
	if err := p.Check(); err != nil {
		return "", err
	}
	var b strings.Builder
	var err error
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	paths := func(filter string, ps []string) string {
		var parts []string
		for _, x := range ps {
			q, qerr := sbplString(x)
			if qerr != nil && err == nil {
				err = qerr
			}
			parts = append(parts, "("+filter+" "+q+")")
		}
		return strings.Join(parts, " ")
	}
	w("(version 1)")
	w("; toolsd's sandbox: generated from the policy by internal/sandbox.SeatbeltProfile")
	w("(deny default)")
	w("")
	w("; the tool and every process it starts, which inherit this profile")
	w("(allow process-exec process-fork)")
	w("(allow signal (target same-sandbox))")
	w("(allow process-info* (target same-sandbox))")
	w("")
	w("; what ordinary programs ask of the system")
	w("(allow sysctl-read mach-host*)")
	w("(allow user-preference-read)")
	w(`(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo") (global-name "com.apple.trustd.agent"))`)
	w("(allow ipc-posix-sem ipc-posix-shm)")
	w("(allow pseudo-tty)")
	w("")
	w("; reads")
	w("(allow file-read* %s)", paths("subpath", p.Read))
	if len(p.Write) > 0 {
		w("; writes")
		w("(allow file-write* %s)", paths("subpath", p.Write))
	}
	w("")
	w("; devices: only the usual ones (a disk's device would give every file's bytes)")
	w(`(deny file-read* file-write* (subpath "/dev"))`)
	w(`(allow file-read* file-write* file-ioctl %s (regex #"^/dev/ttys[0-9]+$"))`, paths("subpath", seatbeltDevices))
	if len(p.Protect) > 0 || len(p.Watch) > 0 {
		w("")
		w("; read-only: the git folders and the protected settings, and what git would take")
		w("; for the workspace's repository or configuration where a command may write (a .git")
		w("; above the workspace, ~/.gitconfig): Seatbelt holds a name, so these cannot be made")
		w("(deny file-write* %s)", paths("subpath", append(slices.Clone(p.Protect), p.Watch...)))
	}
	if len(p.Deny) > 0 {
		w("")
		w("; hidden: neither read nor written")
		w("(deny file-read* file-write* %s)", paths("subpath", p.Deny))
	}
	w("")
	switch p.Net.Mode {
	case NetNone:
		w("; network: none")
	case NetProxy:
		_, port, perr := net.SplitHostPort(p.Net.Proxy)
		if perr != nil {
			return "", fmt.Errorf("sandbox: the proxy's address %q: %w", p.Net.Proxy, perr)
		}
		w("; network: only the egress proxy, on the loopback")
		w(`(allow network-outbound (remote ip "localhost:%s"))`, port)
	case NetDirect:
		w("; network: not confined (names resolved by mDNSResponder)")
		w(`(allow network-outbound (remote ip "*:*") (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))`)
		w(`(allow network-bind network-inbound (local ip "*:*"))`)
	}
	if p.UnixSockets {
		w("; Unix sockets")
		w("(allow network-outbound (remote unix-socket))")
		w("(allow network-bind network-inbound (local unix-socket))")
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// sbplString quotes s as an SBPL string; a control character is refused (a policy path
// never has one).
func sbplString(s string) (string, error) {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("sandbox: path %q has a control character", s)
		}
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, nil
}
