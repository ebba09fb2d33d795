package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/toolsd/toolsd/internal/fsopen"
)

// Sentinel errors. Errors returned by the store wrap one of these where one applies; the rpc
// layer maps them to JSON-RPC codes with errors.Is.
var (
	// ErrNotFound: no call, output or value with that id.
	ErrNotFound = errors.New("store: not found")
	// ErrDuplicate: a call with the same (sessionID, callID) exists.
	ErrDuplicate = errors.New("store: duplicate")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrExpired: the output existed but retention pruned it. Errors wrapping ErrExpired wrap
	// ErrNotFound too, so a caller that only knows ErrNotFound still maps it right.
	ErrExpired = errors.New("store: output expired")
	// ErrBadCursor: a ListCalls cursor this store did not hand out.
	ErrBadCursor = errors.New("store: bad cursor")
	// ErrInvalid: an argument the store cannot accept (an empty id, a NUL byte in an id).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrSchema: the file was written by a newer toolsd (see SchemaError).
	ErrSchema = errors.New("store: unknown schema version")
	// ErrCorrupt: the file at the path is not a toolsd store or is damaged.
	ErrCorrupt = errors.New("store: not a toolsd store")
	// ErrLocked: another process holds the file.
	ErrLocked = errors.New("store: locked")
)

// Defaults of Options.
const (
	DefaultTimeout       = 500 * time.Millisecond
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultPruneInterval = time.Hour
)

// batchDelay is bbolt's MaxBatchDelay for the call records' batches (updateCall).
const batchDelay = time.Millisecond

// Options configure Open. A nil *Options means all defaults.
type Options struct {
	// Timeout is how long Open waits for the file's lock before it fails with ErrLocked (see
	// the package doc). Default DefaultTimeout.
	Timeout time.Duration
	// Retention: outputs older than this are pruned in the background. Default
	// DefaultRetention; a negative value disables pruning.
	Retention time.Duration
	// PruneInterval is how often the background goroutine prunes old outputs (it also does
	// right after Open). Default DefaultPruneInterval.
	PruneInterval time.Duration
	// Sync makes every commit fsync the file, so that committed data survives a power loss or
	// a kernel crash. Without it (the default) a commit is written to the file with pwrite and
	// stays in the OS page cache until the kernel flushes it: durable against the daemon
	// crashing or being killed with SIGKILL, which is the promise toolsd makes, at a fraction
	// of the cost.
	Sync bool
	// MaxPageBytes caps the content of one ReadOutput page. Default DefaultMaxPageBytes.
	MaxPageBytes int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives warnings (pruning, recovery). Default: discard.
	Logger *slog.Logger

	// pruned, if set (by tests), is called after each background pruning pass.
	pruned func(n int, err error)
}

// Store is the durable record of toolsd: calls, full outputs, per-session values and the
// workspace's persisted permission answers, in one bbolt file. It is safe for concurrent use.
// It owns one goroutine (the pruner), stopped by Close.
type Store struct {
	db   *bolt.DB
	path string
	opts Options
	// chunkSz is the chunk size of new outputs (ChunkSize; tests make it small).
	chunkSz int
	now     func() time.Time
	log     *slog.Logger

	done    chan struct{}
	wg      sync.WaitGroup
	closeMu sync.Mutex // guards closed
	closed  bool
	pruneMu sync.Mutex // serializes Prune passes
	// contentMu is held for reading while content is stored, and for writing while unused
	// content is collected.
	contentMu sync.RWMutex
	// callWriters counts the CreateCall and UpdateCall writes under way (updateCall).
	callWriters atomic.Int32
}

// Open opens (creating if needed) the store at path. Parent folders are made with mode 0700
// and the file with 0600. If another process holds path for longer than Options.Timeout,
// Open fails with ErrLocked (see the package doc). Open marks calls a dead daemon left
// pending or running as interrupted, finalizes outputs it left open, and starts the
// background pruner.
func Open(path string, opts *Options) (*Store, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.PruneInterval <= 0 {
		o.PruneInterval = DefaultPruneInterval
	}
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = DefaultMaxPageBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if path == "" {
		return nil, fmt.Errorf("%w: empty store path", ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	path = abs
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: make the folder of %s: %w", path, err)
	}

	s := &Store{opts: o, chunkSz: ChunkSize, now: o.Now, log: o.Logger.With("component", "store"), done: make(chan struct{})}

	db, err := openBolt(path, o.Timeout, o.Sync)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is in use by another toolsd process (the daemon that owns the workspace, one serving an editor with --standalone, or another folder's daemon given the same --store); use that daemon, stop it, or pass another --store", ErrLocked, path)
	}
	if err != nil {
		return nil, err
	}
	s.db, s.path = db, path
	s.db.MaxBatchDelay = batchDelay

	// A store of the current schema is only read: a write transaction would commit (and
	// write pages) at every start of the daemon.
	current := false
	_ = s.db.View(func(tx *bolt.Tx) error { current = schemaCurrent(tx); return nil })
	if !current {
		if err := s.db.Update(func(tx *bolt.Tx) error { return initSchema(tx, s.path) }); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	if err := s.importCallLog(); err != nil {
		s.db.Close()
		return nil, err
	}
	if err := s.recover(); err != nil {
		s.db.Close()
		return nil, err
	}
	s.wg.Add(1)
	go s.maintain()
	return s, nil
}

// openBolt opens one bbolt file with a lock timeout, turning panics and bbolt's errors about a
// damaged file into errors that name the file.
func openBolt(path string, timeout time.Duration, sync bool) (*bolt.DB, error) {
	var f *os.File
	bo := &bolt.Options{
		Timeout: timeout,
		NoSync:  !sync,
		// Growing the file fsyncs it unless told not to: a stall of seconds with a lot of
		// dirty data, and it only matters for power loss, which Sync is for.
		NoGrowSync: !sync,
		// Only a regular file, checked before bbolt writes its first pages to it: bbolt
		// would write them into a device, and fail on a FIFO with "illegal seek".
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			ff, err := fsopen.OpenFile(name, flag, perm)
			f = ff
			return ff, err
		},
	}
	db, err := openBoltRecover(path, bo)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, err
		}
		if te := (*fsopen.TypeError)(nil); errors.As(err, &te) {
			return nil, fmt.Errorf("%w: %v: move it away or pass another store path", ErrCorrupt, te)
		}
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrVersionMismatch) ||
			errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrInvalidMapping) || errors.Is(err, errPanicked) {
			return nil, fmt.Errorf("%w: %s is not a bbolt database or is damaged (%v): move it away or pass another store path", ErrCorrupt, path, err)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = f.Chmod(0o600)
	}
	return db, nil
}

var errPanicked = errors.New("panic while opening")

func openBoltRecover(path string, bo *bolt.Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %v", errPanicked, r)
		}
	}()
	return bolt.Open(path, 0o600, bo)
}

// DefaultPath is the store file of a workspace folder (its real path): one per workspace
// folder under the user's XDG state folder, never inside the workspace.
func DefaultPath(folder string) string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(folder))
	name := strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return r
		}
		return '_'
	}, filepath.Base(folder))
	return filepath.Join(base, "toolsd", name+"-"+hex.EncodeToString(sum[:6])+".db")
}

func (s *Store) chunkSize() int { return s.chunkSz }

// Path is the store's file (absolute).
func (s *Store) Path() string { return s.path }

// Close stops the pruner and closes the file. Calls after Close return ErrClosed. Close is
// idempotent.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.closeMu.Unlock()
	s.wg.Wait()
	return s.db.Close()
}

func (s *Store) isClosed() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.closed
}

// view runs a read transaction.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	if s.isClosed() {
		return ErrClosed
	}
	return mapBoltErr(s.db.View(fn))
}

// update runs fn in a write transaction and commits it: what fn wrote is on record when
// update returns. A panic in fn fails this update only.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	if s.isClosed() {
		return ErrClosed
	}
	return mapBoltErr(s.db.Update(func(tx *bolt.Tx) error { return safeCall(fn, tx) }))
}

// updateCall runs a CreateCall or UpdateCall write. A lone writer commits at once
// (DB.Update); a writer that comes while another is under way joins a batch (DB.Batch),
// whose writes share one commit, since most of a small commit's cost is per transaction,
// not per write. Either way it returns after the transaction holding its write has
// committed, or with its own error: a batch runs a write that fails again alone. fn may
// therefore run more than once, each time in a fresh transaction.
func (s *Store) updateCall(fn func(*bolt.Tx) error) error {
	if s.isClosed() {
		return ErrClosed
	}
	safe := func(tx *bolt.Tx) error { return safeCall(fn, tx) }
	defer s.callWriters.Add(-1)
	if s.callWriters.Add(1) == 1 {
		return mapBoltErr(s.db.Update(safe))
	}
	return mapBoltErr(s.db.Batch(safe))
}

func mapBoltErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// safeCall turns a panic in fn into an error, so that one broken update fails only its caller.
func safeCall(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: panic in an update: %v", r)
		}
	}()
	return fn(tx)
}
