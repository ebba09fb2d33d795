package attach

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ReadyFDEnv names, in an owner's environment, the file descriptor (on Windows, the
// inherited handle) on which it tells its starter that it is ready (see OwnerOptions.Ready).
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
	// Streams, when set, are the client's standard input and output: they are handed to
	// the owner with the hello, which then serves the protocol on them directly (no copy
	// through this process); where the system cannot hand them over (Windows), Conn.Wait
	// copies them over the connection instead (Hello.Relay). Prefix is input already read
	// from the first of them.
	Streams [2]*os.File
	Prefix  []byte

	// relay relays Streams even where they could be handed over (tests of the relay).
	relay bool
}

// Conn is a connection to a workspace's owner, after the hello.
type Conn struct {
	net.Conn
	r       *bufio.Reader
	Welcome Welcome
	relayed [2]*os.File // the client's streams, when Wait copies them
}

// Read reads what the owner sent (through what the welcome's reader buffered).
func (c *Conn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Wait, for a client that gave its streams to the owner, waits until the owner has
// finished serving them and returns the exit code it names; ok is false when the owner went
// away without saying (it crashed or was killed). Relayed streams it copies meanwhile (see
// relay).
func (c *Conn) Wait() (code int, ok bool) {
	if c.relayed[0] != nil {
		return relay(c.Conn, c.r, c.relayed[0], c.relayed[1])
	}
	var e End
	if err := readLine(c.r, &e); err != nil {
		return 1, false
	}
	return e.Exit, true
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
		c, err := try(o, deadline)
		if err == nil {
			return c, nil
		}
		last = err
		if errors.Is(err, errRefused) {
			continue // an owner answered: ask again (it may have been too busy, or be exiting)
		}
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
func try(o DialOptions, deadline time.Time) (*Conn, error) {
	uc, err := dialOwner(deadline, o.Paths.Socket)
	if err != nil {
		return nil, err
	}
	_ = uc.SetDeadline(deadline)
	h := o.Hello
	var relayed [2]*os.File
	if o.Streams[0] != nil {
		h.Prefix = len(o.Prefix)
		if canHandOver && !o.relay {
			h.Streams = true
		} else {
			h.Relay, relayed = true, o.Streams
		}
	}
	line, err := json.Marshal(h)
	if err != nil {
		_ = uc.Close()
		return nil, err
	}
	line = append(line, '\n')
	if h.Streams {
		err = handOver(uc, line, o.Streams[0], o.Streams[1])
	} else {
		_, err = uc.Write(line)
	}
	if err != nil {
		_ = uc.Close()
		return nil, err
	}
	if len(o.Prefix) > 0 {
		if _, err := uc.Write(o.Prefix); err != nil {
			_ = uc.Close()
			return nil, err
		}
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
	return &Conn{Conn: uc, r: br, Welcome: w, relayed: relayed}, nil
}

// start starts an owner and waits until it is ready, lost the election, or failed (its
// error is returned), within the deadline.
func start(cmd *exec.Cmd, deadline time.Time) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	detach(cmd, pw)
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	err = cmd.Start()
	_ = pw.Close()
	if err != nil {
		return fmt.Errorf("attach: starting the workspace's owner: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it if it exits while we live
	// Until the deadline (on Windows, whose anonymous pipes have none, until the owner's word).
	_ = pr.SetReadDeadline(deadline)
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "error: "); ok {
		return fmt.Errorf("the workspace's daemon could not start: %s", msg)
	}
	return nil // ready, or it lost the election (the pipe closed): connect again
}
