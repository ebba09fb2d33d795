package sandbox

// The names every system's sandbox shares: the stage's argument and handshake, the modes,
// what the system offers (Support), the proxy's environment.

// StageArg is the first argument that makes the toolsd binary run as a stage: the process
// that becomes the tool. The guard starts `toolsd __sandbox [-ns] POLICY -- cmd args…` with
// the handshake socket as fd 3; the stage confines itself, reports on fd 3, and execs cmd.
const StageArg = "__sandbox"

// Handshake messages, stage to guard, on fd 3 (a SOCK_SEQPACKET socket).
const (
	// MsgOK: confined; the tool is about to be exec'd. With a network namespace in proxy
	// mode, the message carries the loopback listener the guard bridges to the proxy.
	MsgOK = "ok"
	// MsgNoNamespaces: the namespaces could not be set up (user namespaces that give no
	// capabilities, say): the guard starts the stage again without them.
	MsgNoNamespaces = "nons"
	// MsgNotFound: the command was not found (exit code 127).
	MsgNotFound = "notfound"
	// MsgError: confinement failed; the rest of the message says why. The command does not
	// run.
	MsgError = "err"
)

// Mode names what confines a process.
const (
	// ModeNamespaces: Landlock and seccomp in user, mount and network namespaces of its own
	// (the protected paths are read-only mounts; the network is a loopback of its own).
	ModeNamespaces = "namespaces"
	// ModeLandlock: Landlock and seccomp only (the protected paths are cut out of the
	// writable folders by Landlock; the network is refused by seccomp and Landlock).
	ModeLandlock = "landlock"
	// ModeSeatbelt: macOS's Seatbelt, a profile generated from the policy (SeatbeltProfile)
	// applied by sandbox-exec.
	ModeSeatbelt = "seatbelt"
)

// Support is what this system offers the sandbox: on Linux, Landlock, seccomp and
// namespaces; on macOS, Seatbelt; on Windows, nothing yet (Available is false, so nothing is
// confined and nothing is allowed because of a sandbox).
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int `json:"landlockABI"`
	// Seccomp reports seccomp filters.
	Seccomp bool `json:"seccomp"`
	// Namespaces reports user, mount and network namespaces that give the stage the
	// capabilities it needs (to mount and to bring a loopback up).
	Namespaces bool `json:"namespaces"`
	// NamespacesWhy says why there are none.
	NamespacesWhy string `json:"namespacesWhy,omitempty"`
	// AppArmorUserns reports that AppArmor restricts unprivileged user namespaces to the
	// programs its profiles allow (Ubuntu from 23.10, by default from 24.04).
	AppArmorUserns bool `json:"appArmorUserns,omitempty"`
	// Seatbelt reports macOS's sandbox-exec (SeatbeltExec), which confines a process by a
	// profile generated from its policy (SeatbeltProfile).
	Seatbelt bool `json:"seatbelt,omitempty"`
}

// Available reports whether processes can be confined at all.
func (s Support) Available() bool { return s.LandlockABI >= 1 && s.Seccomp || s.Seatbelt }

// Mode is the mode confined processes run in ("" when they cannot be confined).
func (s Support) Mode(landlockOnly bool) string {
	switch {
	case !s.Available():
		return ""
	case s.Seatbelt:
		return ModeSeatbelt
	case s.Namespaces && !landlockOnly:
		return ModeNamespaces
	}
	return ModeLandlock
}

// ProxyEnv are the variables that send a tool's HTTP(S) traffic through the proxy at addr.
func ProxyEnv(addr string) []string {
	u := "http://" + addr
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"ALL_PROXY=" + u, "all_proxy=" + u, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		"NODE_USE_ENV_PROXY=1",
	}
}
