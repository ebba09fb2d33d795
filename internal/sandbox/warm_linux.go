package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A stage can be started ahead of its command (StartWarm): it confines itself as it would
// for a command, then waits on the handshake socket for the command (Warm.Run), which it
// execs at once. What is set up ahead — the namespaces and their mounts, the Landlock rules,
// the seccomp filter — depends on the files the policy names as they were then: Stamp takes
// that state, and a stage whose stamp no longer holds is not used (Warm.Close).

// warmFlag is the stage's argument for a start ahead of its command.
const warmFlag = "-warm"

// Launch is a command for a process started ahead of it: sent by the daemon to a guard
// started ahead (internal/proc), and by that guard to its stage, with the command's standard
// output and error as the message's descriptors.
type Launch struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`
}

// maxLaunch bounds a Launch message (its environment, mostly).
const maxLaunch = 1 << 20

// SendLaunch sends l on the SOCK_SEQPACKET socket fd, with files (standard output and error)
// as its descriptors.
func SendLaunch(fd int, l Launch, files ...*os.File) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if len(b) > maxLaunch {
		return fmt.Errorf("sandbox: a command of %d bytes (its environment, mostly) is over the %d a process started ahead takes", len(b), maxLaunch)
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	var rights []byte
	if len(fds) > 0 {
		rights = unix.UnixRights(fds...)
	}
	err = unix.Sendmsg(fd, b, rights, nil, 0)
	runtime.KeepAlive(files) // sent by number: open until sendmsg has taken them
	return err
}

// RecvLaunch receives a Launch sent by SendLaunch on fd, with its descriptors (want of them,
// or an error).
func RecvLaunch(fd int, want int) (Launch, []*os.File, error) {
	var l Launch
	// The message's length first (MSG_TRUNC), then the message.
	var n, oobn int
	var err error
	for {
		n, _, _, _, err = unix.Recvmsg(fd, make([]byte, 1), nil, unix.MSG_PEEK|unix.MSG_TRUNC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err == nil && (n <= 0 || n > maxLaunch) {
		err = fmt.Errorf("sandbox: a command message of %d bytes", n)
	}
	if err != nil {
		return l, nil, err
	}
	buf, oob := make([]byte, n), make([]byte, unix.CmsgSpace(4*want))
	for {
		n, oobn, _, _, err = unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err == nil && n == 0 {
		err = errors.New("sandbox: the other end went away")
	}
	if err != nil {
		return l, nil, err
	}
	var files []*os.File
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for i := range msgs {
			fds, ferr := unix.ParseUnixRights(&msgs[i])
			if ferr != nil {
				continue
			}
			for _, d := range fds {
				files = append(files, os.NewFile(uintptr(d), "launch"))
			}
		}
	}
	if err := json.Unmarshal(buf[:n], &l); err != nil || len(l.Argv) == 0 || len(files) != want {
		for _, f := range files {
			_ = f.Close()
		}
		return l, nil, fmt.Errorf("sandbox: not a command for a process started ahead (%d descriptors; %v)", len(files), err)
	}
	return l, files, nil
}

// awaitCommand is the warm stage's wait for its command: it takes the command's standard
// output and error as its own, enters its folder and environment, and returns its argv.
func awaitCommand() ([]string, error) {
	l, files, err := RecvLaunch(handshakeFD, 2)
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		if err := unix.Dup3(int(f.Fd()), 1+i, 0); err != nil {
			return nil, err
		}
		_ = f.Close()
	}
	if l.Dir != "" {
		if err := os.Chdir(l.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "toolsd: %v\n", err)
			return nil, err
		}
	}
	os.Clearenv()
	for _, kv := range l.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			_ = os.Setenv(k, v)
		}
	}
	return l.Argv, nil
}

// Warm is a stage started ahead of its command, confined and waiting for it. Owned by the
// guard that started it.
type Warm struct {
	pid  int
	mode string
	sock *os.File // the guard's end of the handshake socket
}

// StartWarm starts a stage confined by p with no command yet, trying namespaces first as
// Start does, with the guard's standard streams until its command brings its own. It
// returns once the stage is confined.
func StartWarm(p *Policy) (*Warm, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if p.Net.Mode == NetProxy {
		return nil, errors.New("sandbox: a process with a proxy of its own is not started ahead")
	}
	pid, mode, sock, err := start(p, nil, os.Stdin, os.Stdout, os.Stderr, !p.LandlockOnly)
	if errors.Is(err, errNoNamespaces) {
		pid, mode, sock, err = start(p, nil, os.Stdin, os.Stdout, os.Stderr, false)
	}
	if err != nil {
		return nil, err
	}
	return &Warm{pid: pid, mode: mode, sock: sock}, nil
}

// Mode is the mode the stage runs in.
func (w *Warm) Mode() string { return w.mode }

// Run hands the stage its command, with stdout and stderr, and returns the command's pid
// once it is about to be exec'd. Errors are as Start's.
func (w *Warm) Run(l Launch, stdout, stderr *os.File) (int, error) {
	defer w.sock.Close()
	if err := SendLaunch(int(w.sock.Fd()), l, stdout, stderr); err != nil {
		w.kill()
		return 0, fmt.Errorf("sandbox: handing the command to its stage: %w", err)
	}
	word, rest, _, err := receive(int(w.sock.Fd()))
	switch {
	case err != nil:
		w.kill()
		return 0, fmt.Errorf("sandbox: the stage ended before running the command (%v)", err)
	case word == MsgOK:
		return w.pid, nil
	case word == MsgNotFound:
		w.reap()
		return 0, fmt.Errorf("%s: %w", l.Argv[0], exec.ErrNotFound)
	default:
		w.reap()
		return 0, fmt.Errorf("sandbox: %s", rest)
	}
}

// Close kills a stage that was not given its command, and reaps it.
func (w *Warm) Close() {
	_ = w.sock.Close()
	w.kill()
}

func (w *Warm) kill() {
	_ = unix.Kill(w.pid, unix.SIGKILL)
	w.reap()
}

func (w *Warm) reap() {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(w.pid, &ws, 0, nil); !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// A Stamp is the state of the files a stage's set-up depends on, taken before a stage is
// started ahead: whether each path the policy names exists and which file it is, and when
// each folder whose entries Landlock's grants were cut from last changed. If any of it
// changed by the time the command comes, the stage is not used.
//
// Which file: device, inode, type and birth time. The inode number alone does not do: a
// file system hands a freed number to the next file it makes, so a protected folder removed
// and made again as a link (or as a folder no mount holds) can come back under the number
// the stamp has. A folder's entries changed: its change time, which (unlike its modification
// time) no process can set back. Times have the clock's coarse tick as grain, so a change in
// the tick the stamp was taken in could leave them equal: a stamp that saw a time that
// recent never holds.
type Stamp struct {
	ns, landlock []stamped // one per mode: the folders listed differ
	racy         bool
}

type stamped struct {
	path     string
	listed   bool
	exists   bool
	dev, ino uint64
	kind     uint32        // the type bits of the mode
	born     unix.Timespec // the birth time (the change time where the file system keeps none)
	changed  unix.Timespec // a listed folder's change time
}

// racyGrain is how recent a time a stamp saw may be before it cannot tell a later change
// apart from it: two ticks of the kernel's coarsest clock (10 ms at HZ=100).
const racyGrain = 20 * time.Millisecond

// TakeStamp takes the stamp of p. When it sees a time within racyGrain of its taking, it
// waits out the rest of the grain and takes it again (a guard started ahead does this
// before it says it is ready); a stamp that still sees one after a few tries never holds.
func TakeStamp(p *Policy) Stamp {
	var s Stamp
	for range 4 {
		at := time.Now()
		s = Stamp{ns: stampOf(p, false), landlock: stampOf(p, true)}
		newest := time.Time{}
		for _, st := range append(slices.Clone(s.ns), s.landlock...) {
			for _, t := range []unix.Timespec{st.born, st.changed} {
				if u := time.Unix(t.Unix()); u.After(newest) {
					newest = u
				}
			}
		}
		wait := racyGrain - at.Sub(newest)
		if wait <= 0 {
			return s
		}
		time.Sleep(min(wait, racyGrain))
	}
	s.racy = true
	return s
}

// Holds reports whether the stamp still holds for a stage that runs in mode. (Which folders
// the grants list depends only on what the stamp holds: the paths, and the folders' entries.)
func (s Stamp) Holds(mode string) bool {
	if s.racy {
		return false
	}
	want := s.ns
	if mode == ModeLandlock {
		want = s.landlock
	}
	for _, w := range want {
		if w != stampPath(w.path, w.listed) {
			return false
		}
	}
	return true
}

func stampOf(p *Policy, protectByLandlock bool) []stamped {
	var paths []string
	for _, list := range [][]string{p.Read, p.Write, p.Protect, p.Deny, p.Watch} {
		paths = append(paths, list...)
	}
	var listed []string
	planListing(p, protectByLandlock, &listed)
	out := make([]stamped, 0, len(paths)+len(listed))
	for i, path := range append(paths, listed...) {
		out = append(out, stampPath(filepath.Clean(path), i >= len(paths)))
	}
	return out
}

// stampPath is path's stamp; with listed, a folder whose entries count, its time of change.
func stampPath(path string, listed bool) stamped {
	s := stamped{path: path, listed: listed}
	id, changed, ok := statIdentity(path)
	if !ok {
		return s
	}
	s.exists, s.dev, s.ino, s.kind = true, id.dev, id.ino, id.kind
	s.born = unix.NsecToTimespec(changed)
	if id.born != 0 {
		s.born = unix.NsecToTimespec(id.born)
	}
	if listed {
		s.changed = unix.NsecToTimespec(changed)
	}
	return s
}
