package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter refuses what Landlock does not cover: the system calls that change the
// kernel's view of the world (mounts, namespaces, modules, keyrings, tracing another
// process), Unix sockets (a path Landlock cannot guard before ABI 9: the daemon's socket,
// an ssh-agent, a container engine), socket families other than IPv4, IPv6 and netlink, and,
// without a network namespace, every socket that Landlock's TCP rules do not cover (UDP,
// raw, SCTP, MPTCP). Refused calls fail with EPERM (Operation not permitted); clone3 fails
// with ENOSYS so that the C library falls back to clone, whose flags can be checked.

// denied are refused outright.
var denied = []string{
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"bpf", "perf_event_open", "userfaultfd",
	"add_key", "keyctl", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"name_to_handle_at", "open_by_handle_at",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup",
	"lookup_dcookie", "iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"fanotify_init",
}

// Socket families.
const (
	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16
)

// cloneNamespaces are clone's flags that make a namespace.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// above32 matches an argument whose upper 32 bits are set: the kernel reads an int argument
// from the lower half only, so such a value must not slip past a comparison of the whole.
func above32(arg uint32) seccomp.Condition {
	return seccomp.Condition{Argument: arg, Operation: seccomp.GreaterThan, Value: 0xffffffff}
}

func eq(arg uint32, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: arg, Operation: seccomp.Equal, Value: v}
}

// filterPolicy returns the seccomp policy for p. netns reports whether the process has a
// network namespace of its own.
func filterPolicy(p *Policy, netns bool) seccomp.Policy {
	errno := func(e unix.Errno) seccomp.Action { return seccomp.ActionErrno | seccomp.Action(e) }
	var socket []seccomp.NameWithConditions
	sock := func(cs ...seccomp.Condition) {
		socket = append(socket, seccomp.NameWithConditions{Name: "socket", Conditions: cs})
	}
	sock(above32(0))
	sock(above32(1))
	sock(above32(2))
	// Families other than Unix, IPv4, IPv6 and netlink (packet, vsock, bluetooth, …).
	sock(seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: afUnix},
		seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: afInet},
		seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: afInet6},
		seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: afNetlink})
	if !p.UnixSockets {
		sock(eq(0, afUnix))
	}
	if !netns && p.Net.Mode != NetDirect {
		for _, fam := range []uint64{afInet, afInet6} {
			if p.Net.Mode == NetNone {
				sock(eq(0, fam))
				continue
			}
			// Only plain TCP, which Landlock's rules cover: not UDP or raw (a type other
			// than SOCK_STREAM), nor SCTP or MPTCP (a protocol other than 0 or TCP).
			sock(eq(0, fam), seccomp.Condition{Argument: 1, Operation: seccomp.BitsSet, Value: 0xe})
			sock(eq(0, fam), seccomp.Condition{Argument: 2, Operation: seccomp.GreaterThan, Value: unix.IPPROTO_TCP})
		}
	}
	// Signals to the daemon (Landlock's signal scoping does this from ABI 6 on; before it,
	// this is what stops a tool from signalling the daemon by its pid, or everyone by -1).
	var signals []seccomp.NameWithConditions
	if p.Daemon > 0 {
		for _, name := range []string{"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"} {
			for _, v := range []uint64{uint64(p.Daemon), 0xffffffff_00000000 | uint64(p.Daemon)} {
				signals = append(signals, seccomp.NameWithConditions{Name: name, Conditions: []seccomp.Condition{eq(0, v)}})
			}
			// Neither pid -1 (every process that may be signalled), however it is written.
			if name == "kill" {
				for _, v := range []uint64{0xffffffff, 0xffffffff_ffffffff} {
					signals = append(signals, seccomp.NameWithConditions{Name: name, Conditions: []seccomp.Condition{eq(0, v)}})
				}
				signals = append(signals, seccomp.NameWithConditions{Name: name, Conditions: []seccomp.Condition{
					above32(0), {Argument: 0, Operation: seccomp.LessThan, Value: 0xffffffff_00000000}}})
			}
		}
	}
	groups := []seccomp.SyscallGroup{
		{Names: denied, Action: errno(unix.EPERM)},
		{Names: []string{"clone3"}, Action: errno(unix.ENOSYS)},
		{NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "clone", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaces}}},
		}, Action: errno(unix.EPERM)},
		{NamesWithCondtions: socket, Action: errno(unix.EPERM)},
	}
	if len(signals) > 0 {
		groups = append(groups, seccomp.SyscallGroup{NamesWithCondtions: signals, Action: errno(unix.EPERM)})
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
}

// loadFilter installs the filter of p on every thread of the process. A system call of
// another architecture's ABI (a 32-bit call on a 64-bit kernel) fails with ENOSYS: the
// library's program lets another architecture through, so the program starts with a check
// of its own.
func loadFilter(p *Policy, netns bool) error {
	pol := filterPolicy(p, netns)
	insts, err := pol.Assemble()
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
	}
	raw, err := bpf.Assemble(append(guard, insts...))
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if e != 0 {
		return fmt.Errorf("seccomp: loading the filter: %w", e)
	}
	return nil
}
