package attach

import (
	"bufio"
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

// ReadyFDEnv names, in an owner's environment, the file descriptor on which it tells its
// starter that it is ready (see OwnerOptions.Ready).
const ReadyFDEnv = "TOOLSD_READY_FD"

// DefaultDialTimeout bounds how long a client tries to attach, starting an owner if needed.
const DefaultDialTimeout = 20 * time.Second

// DialOptions configure Dial.
type DialOptions struct {
	Paths Paths
	Hello Hello
	// Owner returns the command that starts an owner for the folder (the binary in
	// "__owner" mode with the client's flags). Dial starts it detached: a session of its
	// own, no standard streams, no death signal from us.
	Owner func() *exec.Cmd
	// Timeout bounds the whole attach (DefaultDialTimeout when zero).
	Timeout time.Duration
}

// Conn is a connection to a workspace's owner, after the hello.
type Conn struct {
	*net.UnixConn
	r       *bufio.Reader
	Welcome Welcome
	pidfd   int // the owner process, to tell a crash from a normal end; -1 if unknown
}

// Read reads what the owner sent (through what the welcome's reader buffered).
func (c *Conn) Read(p []byte) (int, error) {
	if c.r != nil && c.r.Buffered() > 0 {
		return c.r.Read(p)
	}
	return c.UnixConn.Read(p)
}

// WriteTo copies what the owner sends to w (io.Copy uses it; the kernel may splice).
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	var n int64
	if c.r != nil && c.r.Buffered() > 0 {
		b, _ := c.r.Peek(c.r.Buffered())
		m, err := w.Write(b)
		n += int64(m)
		_, _ = c.r.Discard(m)
		if err != nil {
			return n, err
		}
	}
	m, err := io.Copy(w, c.UnixConn)
	return n + m, err
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c.pidfd >= 0 {
		_ = unix.Close(c.pidfd)
		c.pidfd = -1
	}
	return c.UnixConn.Close()
}

// OwnerDied reports, after the owner closed the connection, whether it did so because its
// process ended (a crash or a kill) rather than to end this client's session. It waits at
// most wait for the process to finish exiting.
func (c *Conn) OwnerDied(wait time.Duration) bool {
	if c.pidfd < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(c.pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(wait.Milliseconds()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// errRefused is an owner that answered but would not take us (it is exiting).
var errRefused = errors.New("attach: refused")

// Dial connects to the owner of the workspace, starting one when none answers, and says
// hello. Several clients dialling at once elect one owner between them: the starters that
// lose exit quietly, and every client connects to the winner.
func Dial(o DialOptions) (*Conn, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultDialTimeout
	}
	deadline := time.Now().Add(o.Timeout)
	var last error
	for time.Now().Before(deadline) {
		c, err := try(o.Paths.Socket, o.Hello, deadline)
		if err == nil {
			return c, nil
		}
		last = err
		if o.Owner == nil {
			break
		}
		if err := start(o.Owner(), deadline); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("attach: no owner of the workspace answered on %s within %v (last: %v)", o.Paths.Socket, o.Timeout, last)
}

// try connects and says hello once.
func try(socket string, h Hello, deadline time.Time) (*Conn, error) {
	d := net.Dialer{Deadline: deadline}
	nc, err := d.Dial("unix", socket)
	if err != nil {
		return nil, err
	}
	uc := nc.(*net.UnixConn)
	_ = uc.SetDeadline(deadline)
	if err := writeLine(uc, h); err != nil {
		_ = uc.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(uc, maxLine)
	var w Welcome
	if err := readLine(br, &w); err != nil {
		_ = uc.Close()
		return nil, fmt.Errorf("%w: the owner closed the connection (%v)", errRefused, err)
	}
	if w.Error != "" {
		_ = uc.Close()
		return nil, fmt.Errorf("%w: %s", errRefused, w.Error)
	}
	_ = uc.SetDeadline(time.Time{})
	c := &Conn{UnixConn: uc, r: br, Welcome: w, pidfd: -1}
	if w.PID > 0 {
		if fd, err := unix.PidfdOpen(w.PID, 0); err == nil {
			c.pidfd = fd
		}
	}
	return c, nil
}

// start starts an owner and waits until it is ready, lost the election, or failed (its
// error is returned), within the deadline.
func start(cmd *exec.Cmd, deadline time.Time) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(cmd.Environ(), ReadyFDEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	err = cmd.Start()
	_ = pw.Close()
	if err != nil {
		return fmt.Errorf("attach: starting the workspace's owner: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it if it exits while we live
	_ = pr.SetReadDeadline(deadline)
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "error: "); ok {
		return fmt.Errorf("the workspace's daemon could not start: %s", msg)
	}
	return nil // ready, or it lost the election (the pipe closed): connect again
}

// Splice copies in to the owner and the owner to out until the owner ends the connection.
// When in ends, the owner is told (a half close) and ends the session as if stdin had
// closed. It returns what ended the copy from the owner.
func Splice(c *Conn, in io.Reader, out io.Writer) error {
	go func() {
		_, _ = io.Copy(c.UnixConn, in)
		_ = c.CloseWrite()
	}()
	_, err := io.Copy(out, c)
	return err
}
