package attach

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/mcpserver"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/rpc"
	"github.com/toolsd/toolsd/session"
	"github.com/toolsd/toolsd/store"
)

// DefaultGrace is how long an owner outlives its last client.
const DefaultGrace = 5 * time.Second

// helloTimeout bounds how long a connection may take to say hello.
const helloTimeout = 5 * time.Second

// lockWait bounds how long a starter that lost the election waits for the winner's socket
// (or for the lock, when the holder is exiting).
const lockWait = 10 * time.Second

// OwnerOptions configure RunOwner.
type OwnerOptions struct {
	// Folder is the workspace folder.
	Folder string
	// StorePath is the store file the command line named, or empty for the default.
	StorePath string
	Store     store.Options
	// MaxMessage is --max-message (0: the settings decide).
	MaxMessage int
	// Grace is how long the owner outlives its last client (and waits for its first);
	// DefaultGrace when not positive.
	Grace time.Duration
	// Flags are the owner's flags that clients compare theirs with (see Hello.Flags).
	Flags   map[string]string
	Version string
	Logger  *slog.Logger
	// LogLevel, if set, follows the settings' logLevel.
	LogLevel *slog.LevelVar
	// LogPath is where the owner logs, told to clients.
	LogPath string
	// Ready is told "ready" once the socket accepts clients, or "error: <why>" when the owner
	// cannot serve the folder; it is closed either way. nil tells nobody.
	Ready io.WriteCloser
}

// owner is a running owner.
type owner struct {
	o     OwnerOptions
	log   *slog.Logger
	ws    *session.Workspace
	ln    net.Listener
	paths Paths
	me    string          // who we run as (currentUser): only the same user may attach
	ctx   context.Context // cancelled when the owner exits: ends every connection

	mu      sync.Mutex // guards active, exiting and conns
	active  int        // clients that said hello
	exiting bool
	conns   map[net.Conn]struct{}
	idle    *time.Timer   // fires grace after the last client left
	done    chan struct{} // closed when the owner decides to exit
	wg      sync.WaitGroup
}

// RunOwner is the owner of one workspace folder ("toolsd __owner"): it wins the election or
// leaves quietly, opens the workspace, serves every client on the socket, and exits a grace
// period after its last client left. It returns the process exit code: 0 after serving (or
// after losing the election to an owner that answers), 1 when it could not serve.
func RunOwner(ctx context.Context, o OwnerOptions) int {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	log := o.Logger.With("component", "attach")
	fail := func(err error) int {
		log.Error("cannot own the workspace", "folder", o.Folder, "err", err)
		if o.Ready != nil {
			_, _ = fmt.Fprintf(o.Ready, "error: %v\n", err)
			_ = o.Ready.Close()
		}
		return 1
	}
	paths, real, err := Locate(o.Folder, o.StorePath)
	if err != nil {
		return fail(err)
	}
	me, err := currentUser()
	if err != nil {
		return fail(err)
	}
	lock, won, err := elect(ctx, paths)
	if err != nil {
		return fail(err)
	}
	if !won {
		log.Debug("another owner serves the workspace", "socket", paths.Socket)
		if o.Ready != nil {
			_ = o.Ready.Close()
		}
		return 0
	}
	defer lock.Close() // releases the flock, last
	_ = lock.Truncate(0)
	_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)

	ws, err := session.OpenWorkspace(ctx, session.WorkspaceOptions{
		Folder: real, StorePath: o.StorePath, Store: &o.Store, Logger: o.Logger, LogLevel: o.LogLevel,
	})
	if err != nil {
		return fail(err)
	}
	// Only the lock holder listens.
	ln, err := listen(paths)
	if err != nil {
		_ = ws.Close()
		return fail(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &owner{o: o, log: log, ws: ws, ln: ln, paths: paths, me: me, ctx: ctx, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	w.idle = time.AfterFunc(o.Grace, w.idleExpired) // a starter that never connects
	log.Info("owning the workspace", "folder", real, "socket", paths.Socket, "grace", o.Grace, "store", ws.StorePath())
	if o.Ready != nil {
		_, _ = io.WriteString(o.Ready, "ready\n")
		_ = o.Ready.Close()
	}
	w.wg.Add(1)
	go w.accept()

	select {
	case <-w.done:
		log.Info("the last client left; exiting", "grace", o.Grace)
	case <-ctx.Done():
		log.Info("stopping", "err", context.Cause(ctx))
	}
	w.mu.Lock()
	w.exiting = true
	w.idle.Stop()
	w.mu.Unlock()
	_ = ln.Close() // (a socket file goes with it, while the lock is still held)
	cancel()       // every connection tears down: its calls are cancelled and recorded
	joined := make(chan struct{})
	go func() { w.wg.Wait(); close(joined) }()
	select {
	case <-joined:
	case <-time.After(2 * closeTimeout):
		log.Error("connections did not end in time; exiting anyway")
	}
	if err := ws.Close(); err != nil {
		log.Error("closing the workspace", "err", err)
	}
	return 0
}

// closeTimeout bounds one connection's teardown (rpc's own bound is 5 s).
const closeTimeout = 5 * time.Second

// elect takes the owner's lock. When another process holds it, it waits until that owner's
// socket answers (then won is false) or the lock is released (an exiting owner: then it wins),
// within lockWait.
func elect(ctx context.Context, p Paths) (*os.File, bool, error) {
	f, err := os.OpenFile(p.Lock, os.O_RDWR|os.O_CREATE|openNoFollow, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("opening the lock file: %w", err)
	}
	deadline := time.NewTimer(lockWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		held, err := tryLock(f)
		if err == nil {
			return f, true, nil
		}
		if !held {
			_ = f.Close()
			return nil, false, fmt.Errorf("locking %s: %w", p.Lock, err)
		}
		if c, err := dialOwner(time.Now().Add(time.Second), p.Socket); err == nil {
			_ = c.Close()
			_ = f.Close()
			return nil, false, nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			_ = f.Close()
			return nil, false, fmt.Errorf("another toolsd holds %s but does not answer on %s (waited %v)", p.Lock, p.Socket, lockWait)
		case <-ctx.Done():
			_ = f.Close()
			return nil, false, ctx.Err()
		}
	}
}

func (w *owner) idleExpired() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active > 0 || w.exiting {
		return
	}
	if w.ws.AgentCallsOpen() > 0 {
		// An agent's call is between its hook's before and after: its end will come.
		w.idle.Reset(w.o.Grace)
		return
	}
	w.exiting = true
	close(w.done)
}

func (w *owner) accept() {
	defer w.wg.Done()
	for {
		c, err := w.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				w.log.Error("accepting a client failed", "err", err)
				if isTemporary(err) {
					continue
				}
			}
			return
		}
		// Before a byte is read: only our own user may attach.
		user, pid, err := peerUser(c)
		if err != nil || !sameUser(w.me, user) {
			w.log.Warn("refused a connection from another user", userKey, user, "err", err)
			_ = c.Close()
			continue
		}
		w.mu.Lock()
		if w.exiting {
			w.mu.Unlock()
			_ = c.Close()
			continue
		}
		w.conns[c] = struct{}{}
		w.wg.Add(1)
		w.mu.Unlock()
		go w.serve(c, descends(pid, os.Getpid()))
	}
}

// sameUser admits a peer that runs as we do: peer and me are users as peerUser and
// currentUser name them (a uid in decimal on Unix, a SID string on Windows, both canonical,
// so equal strings are the same user); an unknown peer ("") is refused.
func sameUser(me, peer string) bool { return peer != "" && peer == me }

// isTemporary reports accept errors worth retrying (out of file descriptors, say).
func isTemporary(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED)
}

// serve runs one connection: the hello, then the protocol it names. An internal client (a
// process the owner started itself: a tool, an MCP server that is toolsd mcp of this very
// folder) does not keep the owner alive; the owner kills it when it exits.
func (w *owner) serve(c net.Conn, internal bool) {
	defer w.wg.Done()
	defer func() {
		_ = c.Close()
		w.mu.Lock()
		delete(w.conns, c)
		w.mu.Unlock()
	}()
	stop := context.AfterFunc(w.ctx, func() { _ = c.Close() })
	defer stop()
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	// The first read takes the descriptors a forwarder sends with its hello.
	first := make([]byte, maxLine)
	n, files, err := readFirst(c, first)
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(first[:n]), c), maxLine)
	var h Hello
	if err == nil {
		err = readLine(br, &h)
	}
	if err != nil {
		if n == 0 {
			// Closed without a word: a starter checking that we answer.
			w.log.Debug("a connection closed before its hello", "err", err)
		} else {
			w.log.Info("a connection did not say hello", "err", err)
			_ = writeLine(c, Welcome{Error: err.Error()})
		}
		return
	}
	if h.Proto != ProtoToolsd && h.Proto != ProtoMCP {
		_ = writeLine(c, Welcome{Error: fmt.Sprintf("unknown protocol %q: say %q or %q", h.Proto, ProtoToolsd, ProtoMCP)})
		return
	}
	if h.Streams != (len(files) == 2) || (h.Streams && h.Relay) || h.Prefix < 0 || h.Prefix > maxPrefix {
		_ = writeLine(c, Welcome{Error: fmt.Sprintf("a hello with streams must come with exactly two file descriptors (and without relay), and a prefix of at most %d bytes", maxPrefix)})
		return
	}
	prefix := make([]byte, h.Prefix)
	if _, err := io.ReadFull(br, prefix); err != nil {
		_ = writeLine(c, Welcome{Error: "the prefix was cut short"})
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	w.mu.Lock()
	if w.exiting {
		w.mu.Unlock()
		_ = writeLine(c, Welcome{Error: "the owner is exiting; start a new one"})
		return
	}
	if !internal {
		w.active++
		w.idle.Stop()
	}
	w.mu.Unlock()
	defer func() {
		if internal {
			return
		}
		w.mu.Lock()
		w.active--
		if w.active == 0 && !w.exiting {
			w.idle.Reset(w.o.Grace)
		}
		w.mu.Unlock()
	}()
	if err := writeLine(c, Welcome{PID: os.Getpid(), Version: w.o.Version, Log: w.o.LogPath}); err != nil {
		return
	}
	log := w.log.With("proto", h.Proto, "clientPid", h.PID, "internal", internal)
	if h.Flags != nil && !maps.Equal(h.Flags, w.o.Flags) {
		log.Warn("a client attached with other flags than this owner was started with; the owner's apply", "owner", w.o.Flags, "client", h.Flags)
	}
	log.Debug("client connected", "streams", h.Streams)

	// Where the protocol runs: the client's own streams, relayed ones, or the socket.
	var in io.Reader = br
	var out io.Writer = c
	closeIO := c.Close
	ctx := w.ctx
	var relayed *frameWriter
	switch {
	case h.Relay:
		relayed = &frameWriter{w: c}
		in, out = io.MultiReader(bytes.NewReader(prefix), &frameReader{r: br}), relayed
		// Closing stops the reads only: the end frame still has to go out on c. The
		// client's own end (its input ended, or it died) ends the reads as well.
		closeIO = func() error { return c.SetReadDeadline(time.Now()) }
	case h.Streams:
		stdin, stdout := files[0], files[1]
		in, out = io.MultiReader(bytes.NewReader(prefix), stdin), stdout
		closeIO = func() error { return errors.Join(stdin.Close(), stdout.Close()) }
		// The socket is the client process's life: when it ends, so does the session.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		watched := make(chan struct{})
		defer func() {
			_ = c.Close()
			<-watched
		}()
		go func() {
			defer close(watched)
			_, _ = io.Copy(io.Discard, br)
			cancel()
			_ = closeIO()
		}()
	}
	code := 0
	switch h.Proto {
	case ProtoToolsd:
		open := func(ctx context.Context, p protocol.InitializeParams, n rpc.Notifier) (rpc.Backend, error) {
			return w.openRPC(ctx, p, n, h.Route)
		}
		code = rpc.Serve(ctx, in, out, closeIO, rpc.Options{Version: w.o.Version, MaxMessage: w.o.MaxMessage, Open: open, Logger: w.o.Logger})
	case ProtoMCP:
		err := mcpserver.Serve(ctx, &sdk.IOTransport{Reader: readCloser{in, closeIO}, Writer: writeCloser{out, closeIO}}, mcpserver.Options{
			Workspace: w.ws, Agent: h.Agent, Route: h.Route, Version: w.o.Version, Logger: w.o.Logger,
		})
		if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrClosed) {
			log.Info("MCP session ended", "err", err)
			code = 1
		}
	}
	switch {
	case h.Relay:
		_ = closeIO()
		if b, err := json.Marshal(End{Exit: code}); err == nil {
			_ = relayed.end(b)
		}
	case h.Streams:
		_ = closeIO()
		_ = writeLine(c, End{Exit: code})
	}
	log.Debug("client disconnected", "exit", code)
}

// maxPrefix bounds the input a forwarder read before attaching (its first frame).
const maxPrefix = 64 << 20

// openRPC attaches an editor connection to the workspace at initialize, on the ask route its
// hello named.
func (w *owner) openRPC(_ context.Context, p protocol.InitializeParams, n rpc.Notifier, route string) (rpc.Backend, error) {
	real, err := filepath.EvalSymlinks(p.WorkspaceFolder)
	if err != nil {
		return nil, err
	}
	if real != w.ws.Folder() {
		return nil, fmt.Errorf("this daemon owns %s, not %s", w.ws.Folder(), real)
	}
	co := EditorClient(p, n)
	co.Route = route
	return w.ws.Attach(co)
}

// EditorClient describes an editor attaching with initialize params p.
func EditorClient(p protocol.InitializeParams, n rpc.Notifier) session.ClientOptions {
	co := session.ClientOptions{Kind: protocol.ClientEditor, InitOptions: p.InitializationOptions, Sink: n}
	co.CanAsk = p.Capabilities != nil && p.Capabilities.Ask
	if p.Capabilities != nil {
		co.Hooks = p.Capabilities.Hooks
	}
	if p.ClientInfo != nil {
		co.Name, co.Version = p.ClientInfo.Name, p.ClientInfo.Version
	}
	return co
}

// readCloser and writeCloser give the MCP transport the session's streams and their close.
type readCloser struct {
	r     io.Reader
	close func() error
}

func (r readCloser) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r readCloser) Close() error               { return r.close() }

type writeCloser struct {
	w     io.Writer
	close func() error
}

func (w writeCloser) Write(p []byte) (int, error) { return w.w.Write(p) }
func (w writeCloser) Close() error                { return w.close() }
