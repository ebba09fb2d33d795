package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Start starts argv confined by p, with the given standard streams, leading a process group
// of its own and killed if the caller dies: the caller (the guard) execs this binary as the
// stage, which confines itself and execs argv. It tries user, mount and network namespaces
// first and starts without them when the kernel refuses them (ModeLandlock). It returns the
// tool's pid and the mode it runs in; an error wrapping exec.ErrNotFound when argv[0] does
// not exist; any other error means the command did not run, never that it runs unconfined.
//
// In NetProxy mode with a network namespace, Start serves the tool's loopback listener for
// as long as the caller lives, forwarding each connection to the proxy.
func Start(p *Policy, argv []string, stdin, stdout, stderr *os.File) (pid int, mode string, err error) {
	if err := p.Check(); err != nil {
		return 0, "", err
	}
	pid, mode, _, err = start(p, argv, stdin, stdout, stderr, !p.LandlockOnly)
	if errors.Is(err, errNoNamespaces) {
		pid, mode, _, err = start(p, argv, stdin, stdout, stderr, false)
	}
	return pid, mode, err
}

var errNoNamespaces = errors.New("sandbox: no namespaces")

// start starts the stage, in namespaces when ns, and waits for its first report. Without
// argv the stage is started ahead of its command (-warm): it is then returned with the guard's
// end of the handshake socket, open, to send the command on.
func start(p *Policy, argv []string, stdin, stdout, stderr *os.File, ns bool) (int, string, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, "", nil, fmt.Errorf("sandbox: handshake: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "handshake"), os.NewFile(uintptr(fds[1]), "handshake")
	warm := len(argv) == 0
	keep := false
	defer func() {
		if !keep {
			_ = ours.Close()
		}
	}()
	args := []string{StageArg}
	if ns {
		args = append(args, "-ns")
	}
	name := "toolsd-stage"
	if warm {
		args = append(args, warmFlag)
	} else {
		name = argv[0]
	}
	args = append(append(args, p.Encode(), "--"), argv...)
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Args[0] = name
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = stageAttr(ns, p.Net.Mode != NetDirect)
	if err := cmd.Start(); err != nil {
		_ = theirs.Close()
		if ns {
			return 0, "", nil, fmt.Errorf("%w: %v", errNoNamespaces, err)
		}
		return 0, "", nil, fmt.Errorf("sandbox: starting the stage: %w", err)
	}
	_ = theirs.Close()
	pid := cmd.Process.Pid
	reap := func() {
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, 0, nil); !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}
	word, rest, oob, err := receive(fds[0])
	if err != nil {
		// The stage died before it said anything.
		reap()
		return 0, "", nil, fmt.Errorf("sandbox: the stage ended before confining the command (%v)", err)
	}
	switch word {
	case MsgOK:
		if len(oob) > 0 {
			if l := listenerFrom(oob); l != nil {
				go bridge(l, p.Net.Proxy)
			}
		}
		keep = warm
		if warm {
			return pid, rest, ours, nil
		}
		return pid, rest, nil, nil
	case MsgNoNamespaces:
		reap()
		return 0, "", nil, fmt.Errorf("%w: %s", errNoNamespaces, rest)
	case MsgNotFound:
		reap()
		return 0, "", nil, fmt.Errorf("%s: %w", argv[0], exec.ErrNotFound)
	default:
		reap()
		return 0, "", nil, fmt.Errorf("sandbox: %s", rest)
	}
}

// receive reads one handshake message: its first word, the rest, and its control data.
func receive(fd int) (word, rest string, oob []byte, err error) {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err == nil && n == 0:
			err = io.EOF
		}
		if err != nil {
			return "", "", nil, err
		}
		word, rest, _ = strings.Cut(string(buf[:n]), " ")
		return word, rest, oob[:oobn], nil
	}
}

// listenerFrom returns the listener passed in a handshake message's control data.
func listenerFrom(oob []byte) net.Listener {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) == 0 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) == 0 {
		return nil
	}
	f := os.NewFile(uintptr(fds[0]), "proxy-listener")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil
	}
	return l
}

// bridge forwards every connection accepted on l (the tool's loopback, in its network
// namespace) to the proxy at addr, until l fails (the guard exits).
func bridge(l net.Listener, addr string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(up, c)
			go pipe(c, up)
			<-done
			<-done
		}()
	}
}

// stageAttr is how the stage is started: its own process group, killed with its parent,
// and with ns in user and mount namespaces of its own (and with netns a network namespace).
func stageAttr(ns, netns bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if !ns {
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	if netns {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	// Kept through the exec of the stage, which needs them to mount and to bring the loopback
	// up, and drops every capability before it execs the tool.
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
	return attr
}
