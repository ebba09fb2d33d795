package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// handshakeFD is the stage's end of the handshake socket.
const handshakeFD = 3

// RunStage is the stage's main: args are [-ns] [-warm] POLICY -- cmd args…. It applies the
// policy to this process and execs cmd; it returns only when it fails (the exit code). With
// -warm there is no cmd yet: once confined, the stage reports so and waits on the handshake
// socket for its command (Warm.Run), then execs it.
func RunStage(args []string) int {
	runtime.LockOSThread() // capabilities are per thread: drop them on the one that execs
	hs := os.NewFile(handshakeFD, "handshake")
	report := func(msg string, files ...*os.File) {
		if hs == nil {
			return
		}
		var rights []byte
		if len(files) > 0 {
			fds := make([]int, len(files))
			for i, f := range files {
				fds[i] = int(f.Fd())
			}
			rights = unix.UnixRights(fds...)
		}
		_ = unix.Sendmsg(handshakeFD, []byte(msg), rights, nil, 0)
	}
	fail := func(err error) int {
		report(MsgError + " " + err.Error())
		fmt.Fprintf(os.Stderr, "toolsd: cannot confine the command: %v\n", err)
		return 126
	}
	ns := false
	if len(args) > 0 && args[0] == "-ns" {
		ns, args = true, args[1:]
	}
	if len(args) > 0 && args[0] == "-probe" {
		// The namespaces probe: can this kernel give us what the stage needs?
		if err := setupNamespaces(&Policy{}, true); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	warm := false
	if len(args) > 0 && args[0] == warmFlag {
		warm, args = true, args[1:]
	}
	if len(args) < 2 || args[1] != "--" || (len(args) < 3) != warm {
		return fail(errors.New("usage: __sandbox [-ns] POLICY -- cmd args, or __sandbox [-ns] -warm POLICY --"))
	}
	p, err := Decode(args[0])
	if err != nil {
		return fail(err)
	}
	if warm && p.Net.Mode == NetProxy {
		return fail(errors.New("a stage started ahead of its command cannot have a proxy of its own"))
	}
	argv := args[2:]
	var path string
	if !warm {
		if path, err = exec.LookPath(argv[0]); err != nil {
			report(MsgNotFound)
			fmt.Fprintf(os.Stderr, "toolsd: %v\n", err)
			return 127
		}
	}
	var listener *os.File
	netns := ns && p.Net.Mode != NetDirect
	if ns {
		if err := setupNamespaces(p, netns); err != nil {
			report(MsgNoNamespaces + " " + err.Error())
			return 125
		}
		if err := reenterFolder(); err != nil {
			return fail(err)
		}
		if p.Net.Mode == NetProxy {
			if listener, err = listenLoopback(p.Net.Proxy); err != nil {
				return fail(fmt.Errorf("the proxy's loopback listener: %w", err))
			}
		}
	}
	if err := dropCapabilities(); err != nil {
		return fail(err)
	}
	if err := limitProcs(p, ns); err != nil {
		return fail(err)
	}
	if err := restrict(p, ns, netns); err != nil {
		return fail(err)
	}
	if err := loadFilter(p, netns); err != nil {
		return fail(err)
	}
	mode := ModeLandlock
	if ns {
		mode = ModeNamespaces
	}
	if warm {
		// Confined: say so, and wait for the command.
		report(MsgOK + " " + mode)
		if argv, err = awaitCommand(); err != nil {
			return 126 // the guard went away, or sent what is not a command: nothing runs
		}
		if path, err = exec.LookPath(argv[0]); err != nil {
			report(MsgNotFound)
			fmt.Fprintf(os.Stderr, "toolsd: %v\n", err)
			return 127
		}
	}
	if err := closeInherited(); err != nil {
		return fail(err)
	}
	env := os.Environ()
	env = append(env, p.Env...)
	if p.Net.Mode == NetProxy {
		env = append(env, ProxyEnv(p.Net.Proxy)...)
	}
	if listener != nil {
		report(MsgOK+" "+mode, listener)
		_ = listener.Close()
	} else {
		report(MsgOK + " " + mode)
	}
	if hs != nil {
		_ = hs.Close()
	}
	err = syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "toolsd: %s: %v\n", argv[0], err)
	return 126
}

// setupNamespaces runs in fresh user and mount namespaces, and with netns a network
// namespace: it brings the loopback up and mounts the protected paths read-only over themselves. Mounts made here are the
// stage's own: the tool can neither undo them (no capabilities, Landlock forbids mounting,
// seccomp refuses mount and umount) nor see beyond them.
func setupNamespaces(p *Policy, netns bool) error {
	if netns {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback: %w", err)
		}
	}
	// Mounts made below must not propagate back to the parent namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	for _, path := range p.Protect {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			// Nothing to hold read-only: one the tool makes, the guard moves aside after it
			// (Watch). The stage makes nothing in the workspace.
			continue
		}
		if err := readOnlyBind(path); err != nil {
			return fmt.Errorf("making %s read-only: %w", path, err)
		}
	}
	for _, path := range p.Deny {
		if !hiddenByMount(p, path) {
			continue
		}
		fi, err := os.Lstat(path)
		if err != nil {
			continue // nothing there to hide
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=000")
		} else {
			err = unix.Mount("/dev/null", path, "", unix.MS_BIND, "")
			if err == nil {
				err = readOnlyBind(path)
			}
		}
		if err != nil {
			return fmt.Errorf("hiding %s: %w", path, err)
		}
	}
	return nil
}

// reenterFolder enters the stage's folder again, by its path, once the mounts are made. The
// stage starts in the command's folder, entered before them: a folder at or below a path
// mounted read-only (or hidden) since is still the one beneath the mount, which the command's
// relative paths would write (a command started in .git writing its config).
func reenterFolder() error {
	wd, err := unix.Getwd()
	if err == nil {
		err = unix.Chdir(wd)
	}
	if err != nil {
		return fmt.Errorf("entering the command's folder through the sandbox's mounts: %w", err)
	}
	return nil
}

// closeInherited marks every descriptor but the standard streams and the handshake (which
// the stage closes itself) close-on-exec: the tool gets nothing the daemon or the guard
// inherited without the flag (closeOnExecFrom says why).
func closeInherited() error {
	if unix.CloseRange(handshakeFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	return closeOnExecFrom(handshakeFD + 1) // before Linux 5.11
}

// readOnlyBind mounts path over itself, read-only, keeping the flags of the mount it is on
// (a user namespace may not clear them).
func readOnlyBind(path string) error {
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for stf, ms := range map[int64]uintptr{unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME} {
		if int64(st.Flags)&stf != 0 {
			flags |= ms
		}
	}
	return unix.Mount("", path, "", flags, "")
}

// loopbackUp sets the IFF_UP flag of "lo" in this network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// listenLoopback listens on addr in this network namespace and returns the listener's file.
func listenLoopback(addr string) (*os.File, error) {
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.(*net.TCPListener).File()
}

// dropCapabilities leaves this thread (the one that execs the tool) with no capabilities,
// none to gain back on exec (the bounding set emptied where we may), and no ambient ones.
func dropCapabilities() error {
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
}

// limitProcs bounds the tool's processes with RLIMIT_NPROC. The limit counts every process
// of the user, so it is set to what the user runs now plus p.MaxProcs. Root is not held by
// it: the guard watches a root tool's tree instead.
func limitProcs(p *Policy, ns bool) error {
	if p.MaxProcs <= 0 || os.Geteuid() == 0 {
		return nil
	}
	n := uint64(p.MaxProcs)
	if !ns {
		n += uint64(userProcs(os.Getuid()))
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &cur); err == nil && cur.Cur < n {
		return nil // already lower
	}
	lim := unix.Rlimit{Cur: n, Max: n}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		return fmt.Errorf("limiting processes: %w", err)
	}
	return nil
}

// userProcs counts the processes of uid.
func userProcs(uid int) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	n := 0
	for _, name := range names {
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+name, &st) == nil && int(st.Uid) == uid {
			n++
		}
	}
	return n
}

// restrict applies Landlock: the filesystem grants of p, and without a network namespace
// the TCP rules (connect only to the proxy's port, bind nothing); signals and abstract Unix
// sockets scoped to the tool's own tree. It uses the best ABI the kernel has (up to what
// go-landlock knows) and refuses to go on without any.
func restrict(p *Policy, ns, netns bool) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return fmt.Errorf("the kernel offers no Landlock (%v)", err)
	}
	cfg := configFor(abi)
	rs := rules(plan(p, !ns), cfg.HandledAccessFS)
	if !netns && p.Net.Mode != NetDirect && abi >= 4 {
		if p.Net.Mode == NetProxy {
			_, port, err := net.SplitHostPort(p.Net.Proxy)
			if err != nil {
				return fmt.Errorf("the proxy's address %q: %w", p.Net.Proxy, err)
			}
			n, err := strconv.ParseUint(port, 10, 16)
			if err != nil {
				return fmt.Errorf("the proxy's port %q: %w", port, err)
			}
			rs = append(rs, landlock.ConnectTCP(uint16(n)))
		}
	} else {
		cfg.HandledAccessNet = 0
	}
	if err := cfg.Restrict(rs...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// configFor returns the go-landlock configuration of ABI version abi (capped at the newest
// go-landlock knows).
func configFor(abi int) landlock.Config {
	configs := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	if abi > len(configs) {
		abi = len(configs)
	}
	return configs[abi-1]
}
