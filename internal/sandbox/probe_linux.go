package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	seccomp "github.com/elastic/go-seccomp-bpf"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Probe finds what the kernel offers. exe is this binary (it runs the stage's namespace
// probe); "" skips that probe.
func Probe(exe string) Support {
	var s Support
	if v, err := ll.LandlockGetABIVersion(); err == nil {
		s.LandlockABI = v
	}
	s.Seccomp = seccomp.Supported()
	s.Namespaces, s.NamespacesWhy = ProbeNamespaces(exe)
	s.AppArmorUserns = AppArmorRestrictsUserns()
	return s
}

// appArmorUsernsSetting is where the kernel says whether AppArmor restricts unprivileged
// user namespaces.
const appArmorUsernsSetting = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"

// AppArmorRestrictsUserns reports whether AppArmor lets only the programs its profiles allow
// make user namespaces with capabilities (kernel.apparmor_restrict_unprivileged_userns = 1).
func AppArmorRestrictsUserns() bool {
	b, err := os.ReadFile(appArmorUsernsSetting)
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// AppArmorFix is what a person runs to let the toolsd binaries at exes (the daemon, which
// probes, and the guard, which starts each stage) make user namespaces under AppArmor's
// restriction, as Ubuntu does for its browsers and for bubblewrap: a profile for each of
// those binaries alone, which leaves it unconfined but for allowing them. The profiles name
// the binaries' paths: they are to be made again if the binaries move.
func AppArmorFix(exes ...string) string {
	var b strings.Builder
	b.WriteString("sudo tee /etc/apparmor.d/toolsd >/dev/null <<'EOF'\n" +
		"abi <abi/4.0>,\n" +
		"include <tunables/global>\n")
	seen := map[string]bool{}
	for _, exe := range exes {
		if seen[exe] {
			continue
		}
		seen[exe] = true
		name := filepath.Base(exe)
		b.WriteString("\nprofile " + name + " " + appArmorPath(exe) + " flags=(unconfined) {\n" +
			"  userns,\n" +
			"  include if exists <local/" + name + ">\n" +
			"}\n")
	}
	b.WriteString("EOF\n" +
		"sudo apparmor_parser -r /etc/apparmor.d/toolsd\n")
	return b.String()
}

// appArmorPath quotes a path for a profile's attachment when it has characters the profile
// language would read otherwise.
func appArmorPath(p string) string {
	if strings.ContainsAny(p, " \t\"#*?[]{}^,") {
		return strconv.Quote(p)
	}
	return p
}

// ProbeNamespaces runs the stage's namespace probe with exe (this binary) and reports
// whether it could set its namespaces up, or why not. It takes a start of the binary (some
// milliseconds), where the rest of Probe takes two system calls. "" does not probe.
func ProbeNamespaces(exe string) (bool, string) {
	if exe == "" {
		return false, "not probed"
	}
	cmd := exec.Command(exe, StageArg, "-probe")
	cmd.SysProcAttr = stageAttr(true, true)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, strings.TrimSpace(fmt.Sprintf("%v %s", err, out))
	}
	return true, ""
}

// Describe is Support in words, one line per fact, as `toolsd sandbox check` prints it.
func (s Support) Describe() []string {
	var out []string
	switch {
	case s.LandlockABI == 0:
		out = append(out, "Landlock: not offered by this kernel (Linux 5.13 or later with Landlock enabled is needed); tool processes run unconfined and every command asks as before")
	default:
		out = append(out, fmt.Sprintf("Landlock: ABI %d%s", s.LandlockABI, abiNotes(s.LandlockABI)))
	}
	if s.Seccomp {
		out = append(out, "seccomp: yes")
	} else {
		out = append(out, "seccomp: no; tool processes run unconfined")
	}
	if s.Namespaces {
		out = append(out, "user namespaces: yes (mount and network namespaces of its own for each tool: the git folder and the protected settings are read-only mounts; the network is a loopback of its own)")
	} else {
		out = append(out, "user namespaces: no ("+s.NamespacesWhy+"); Landlock alone keeps the git folder and the protected settings read-only, so the workspace's top level takes no new entries, and loopback servers are out of reach")
		if s.AppArmorUserns {
			out = append(out, "AppArmor restricts unprivileged user namespaces here (kernel.apparmor_restrict_unprivileged_userns = 1): a profile that allows them for the toolsd binary alone gives its tools their namespaces (below)")
		}
	}
	return out
}

func abiNotes(v int) string {
	var missing []string
	if v < 2 {
		missing = append(missing, "renames and links across folders are refused (ABI 2)")
	}
	if v < 3 {
		missing = append(missing, "truncating a read-only file is not stopped (ABI 3)")
	}
	if v < 4 {
		missing = append(missing, "no TCP rules: without namespaces the network is refused by seccomp alone (ABI 4)")
	}
	if v < 5 {
		missing = append(missing, "device ioctls are not filtered (ABI 5)")
	}
	if v < 6 {
		missing = append(missing, "signals and abstract Unix sockets are not scoped: seccomp refuses signals to the daemon's pid (ABI 6)")
	}
	if len(missing) == 0 {
		return ""
	}
	return "; " + strings.Join(missing, "; ")
}
