package store

// The call log: how a call gets on record without a bbolt commit of its own.
//
// A bbolt commit writes every page it touched with a pwrite of its own: for one call, the
// leaf and branch pages of the three buckets that index it, the root, the freelist and the
// meta page, about nine 4 KiB writes, after materializing each leaf (its keys decoded into
// a slice, copied again to insert one). That was 40% of the daemon's CPU for a read call
// made one after another, and a third under 64 concurrent callers.
//
// Without Options.Sync, CreateCall and UpdateCall append the call's encoded record to a log
// file next to the store and return. The file is mapped shared (logfile.go), so the copy
// puts the record in the kernel's page cache, which is what survives kill -9, the promise
// the store makes without Sync. The entries are committed to bbolt later, many in one
// transaction: by the next write transaction of any kind (ahead of its own work, so the
// order of writes holds), before any read of the call buckets, logFlushDelay after the
// first entry waiting, and at Close. Once every entry is committed the log is emptied;
// under a load that never pauses, a log past maxLogBytes is retired instead: it goes to
// OldLogPath, and is emptied once its entries are committed, to be swapped back in at the
// next retirement. Open replays what a dead daemon left, the retired log first, before
// anything else reads the store. Replaying an entry twice is harmless: each sets a call's
// value and indexes to what they are after it, entries are applied in order, and while the
// log is on every change of a call goes through it. A torn last entry (the process died in
// the middle of a write) fails its checksum and ends the replay; the call it would have
// recorded never got an answer.
//
// With Options.Sync every write is a commit fsynced before it returns, as before: a log
// would need an fsync per entry to keep that promise, and Sync is for those who want every
// commit on the disk, not speed.
//
// A toolsd from before the call log does not read it: one started on this store after a
// crash misses the calls that were only in the log, and if it changes them, the next toolsd
// with the log replays their older states over its changes.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/protocol"
)

// logMagic starts every call log; a file without it is not one and is ignored.
const logMagic = "toolsd call log 1\n"

// logFlushDelay is how long the first entry waiting in the log waits for others to join its
// commit. Entries are durable (against a crash of the process) from the moment they are
// written, so this only trades commits for memory.
const logFlushDelay = 10 * time.Millisecond

// maxLogBytes is the size past which the next commit retires the log: it goes to
// OldLogPath, new entries go to the other file, and the retired one is emptied once the
// commit that holds all its entries is done. Without it the log would only be emptied when
// nothing waits, which a load that never pauses never allows. A retirement is one rename,
// so the bound is small: the two files' pages stay in the daemon's resident memory.
const maxLogBytes = 1 << 20

// castagnoli is the CRC-32C table, made on first use: making it (the hardware variant's
// tables too) took 0.16 ms of every start of the binary as a package variable.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// LogPath is the call log of the store at path.
func LogPath(path string) string { return path + ".log" }

// OldLogPath is where a call log that grew large waits for its entries' commit (see
// maxLogBytes); Open replays it before LogPath.
func OldLogPath(path string) string { return path + ".log.old" }

// logEntry is one change of one call: its whole encoded value (see encodeCall) under its
// sequence, and which indexes change with it.
type logEntry struct {
	seq     uint64
	session string
	call    string
	val     []byte
	flags   byte
	// unfinished is whether the call is pending or running after this change, and n is the
	// entry's place in the order of writes (1, 2, ...); neither is in the file.
	unfinished bool
	n          uint64
}

const (
	entryCreated = 1 << iota // a new call: add it to the call index and its session's list
	entryOpen                // it became unfinished: add it to the unfinished index
	entryClosed              // it finished: remove it from the unfinished index
)

// frame is the head of the entry as the log holds it, which the value follows: the
// payload's length and CRC-32C (little endian), then flags, uvarint seq, the session and call
// ids (each uvarint length, bytes), then the value (written from e.val, not copied).
func (e *logEntry) frame() []byte {
	b := make([]byte, 8, 8+1+3*binary.MaxVarintLen64+len(e.session)+len(e.call))
	b = append(b, e.flags)
	b = binary.AppendUvarint(b, e.seq)
	b = binary.AppendUvarint(b, uint64(len(e.session)))
	b = append(b, e.session...)
	b = binary.AppendUvarint(b, uint64(len(e.call)))
	b = append(b, e.call...)
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)-8+len(e.val)))
	crc := crc32.Update(crc32.Checksum(b[8:], castagnoli()), castagnoli(), e.val)
	binary.LittleEndian.PutUint32(b[4:], crc)
	return b
}

var errTorn = errors.New("torn or damaged entry")

// parseLog returns the entries of a log's contents, and how many bytes at its end were not
// a whole entry (a write the process did not finish, or damage); the zeros that follow the
// last entry in a log file do not count.
func parseLog(data []byte) (entries []*logEntry, rest int) {
	if !bytes.HasPrefix(data, []byte(logMagic)) {
		return nil, len(data)
	}
	p := data[len(logMagic):]
	for len(p) > 0 {
		e, n, err := parseEntry(p)
		if err != nil {
			break
		}
		entries = append(entries, e)
		p = p[n:]
	}
	if len(bytes.TrimRight(p, "\x00")) == 0 {
		return entries, 0
	}
	return entries, len(p)
}

func parseEntry(p []byte) (*logEntry, int, error) {
	if len(p) < 8 {
		return nil, 0, errTorn
	}
	n := int(binary.LittleEndian.Uint32(p))
	if n > len(p)-8 || crc32.Checksum(p[8:8+n], castagnoli()) != binary.LittleEndian.Uint32(p[4:]) {
		return nil, 0, errTorn
	}
	b := p[8 : 8+n]
	if len(b) < 1 {
		return nil, 0, errTorn
	}
	e := &logEntry{flags: b[0]}
	b = b[1:]
	var w int
	if e.seq, w = binary.Uvarint(b); w <= 0 {
		return nil, 0, errTorn
	}
	b = b[w:]
	str := func() (string, bool) {
		l, w := binary.Uvarint(b)
		if w <= 0 || l > uint64(len(b)-w) {
			return "", false
		}
		s := string(b[w : w+int(l)])
		b = b[w+int(l):]
		return s, true
	}
	var ok1, ok2 bool
	e.session, ok1 = str()
	e.call, ok2 = str()
	if !ok1 || !ok2 || e.session == "" || e.call == "" || e.seq == 0 {
		return nil, 0, errTorn
	}
	e.val = bytes.Clone(b)
	return e, 8 + n, nil
}

// apply writes the entry's call and indexes in tx.
func (e *logEntry) apply(tx *bolt.Tx) error {
	calls := tx.Bucket(bucketCalls)
	k := be64(e.seq)
	if err := calls.Put(k, e.val); err != nil {
		return err
	}
	if e.seq > calls.Sequence() {
		if err := calls.SetSequence(e.seq); err != nil {
			return err
		}
	}
	if e.flags&entryCreated != 0 {
		if err := tx.Bucket(bucketCallIndex).Put(callKey(e.session, e.call), k); err != nil {
			return err
		}
		if err := tx.Bucket(bucketCallsBySession).Put(join(e.session, k), nil); err != nil {
			return err
		}
	}
	switch {
	case e.flags&entryOpen != 0:
		return tx.Bucket(bucketUnfinished).Put(k, nil)
	case e.flags&entryClosed != 0:
		return tx.Bucket(bucketUnfinished).Delete(k)
	}
	return nil
}

// callLog is the log file and the entries not yet committed to bbolt.
type callLog struct {
	path string

	mu     sync.Mutex // guards everything below, and orders writes to the file
	cur    *logFile   // the file at path
	size   int        // where cur's entries end
	closed bool
	// queue holds the entries written and not yet committed, in the order written.
	queue []*logEntry
	// latest is the newest queued entry of each call, by callKey.
	latest map[string]*logEntry
	// lastSeq is the highest call sequence handed out.
	lastSeq uint64
	timer   *time.Timer
	armed   bool // timer will fire
	delay   time.Duration
	max     int
	// written counts the entries written (the last one's n).
	written uint64
	// old is the file at oldPath: the retired log, or, once its entries are committed, an
	// empty one that the next retirement makes the log again (nil when there is none).
	old *logFile
	// retired is the n of the last entry in the retired log, 0 when old holds none
	// waiting; oldEnd is where its entries end.
	retired uint64
	oldEnd  int
	oldPath string
	log     *slog.Logger
	// alloc sizes the log files (allocate; tests replace it).
	alloc func(fd int, size int64) error
}

// openLog replays the log a previous daemon left (committing its entries) and starts an empty
// one. It runs in Open, before anything reads the calls.
func (s *Store) openLog() error {
	l := &callLog{path: LogPath(s.path), oldPath: OldLogPath(s.path), latest: map[string]*logEntry{}, delay: logFlushDelay, max: maxLogBytes, log: s.log,
		alloc: allocate}
	if s.opts.logAlloc != nil {
		l.alloc = s.opts.logAlloc
	}
	if s.opts.logDelay > 0 {
		l.delay = s.opts.logDelay
	}
	if s.opts.logMax > 0 {
		l.max = int(s.opts.logMax)
	}
	var entries []*logEntry
	old, err := readLog(l.oldPath)
	if err != nil {
		return err
	}
	entries = append(entries, old.entries...)
	cur, err := readLog(l.path)
	if err != nil {
		return err
	}
	entries = append(entries, cur.entries...)
	if len(entries) > 0 {
		err := s.db.Update(func(tx *bolt.Tx) error { return applyEntries(tx, entries) })
		if err != nil {
			return fmt.Errorf("store: replay the call log %s: %w", l.path, err)
		}
		s.log.Info("replayed the call log of a daemon that stopped", "entries", len(entries))
	}
	for _, r := range []logRead{old, cur} {
		if r.rest > 0 && r.size > int64(len(logMagic)) {
			s.log.Warn("ignored the end of a call log: a write that did not finish, or damage", "file", r.path, "bytes", r.rest)
		}
	}
	// The retired log first, as the replay read them. The log file is made by the first
	// entry (start), not here: making and mapping it is a tenth of a millisecond that the
	// daemon's start need not wait for.
	for _, p := range []string{l.oldPath, l.path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store: remove the replayed call log: %w", err)
		}
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		l.lastSeq = tx.Bucket(bucketCalls).Sequence()
		return nil
	}); err != nil {
		return err
	}
	l.timer = time.AfterFunc(time.Hour, s.flushLog)
	l.timer.Stop()
	s.clog = l
	return nil
}

// logRead is what a call log file held.
type logRead struct {
	path    string
	entries []*logEntry
	rest    int   // bytes at the end that were not a whole entry
	size    int64 // the file's size
}

// readLog reads the call log at path, if there is one.
func readLog(path string) (logRead, error) {
	r := logRead{path: path}
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	f, err := fsopen.OpenFile(path, os.O_RDONLY, 0)
	if te := (*fsopen.TypeError)(nil); errors.As(err, &te) {
		return r, fmt.Errorf("%w: the call log %v: move it away", ErrCorrupt, te)
	}
	if err != nil {
		return r, fmt.Errorf("store: open the call log: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return r, fmt.Errorf("store: read the call log %s: %w", path, err)
	}
	r.size = int64(len(data))
	r.entries, r.rest = parseLog(data)
	return r, nil
}

// start makes the log file, empty, at path. l.mu is held.
func (l *callLog) start() (*logFile, error) {
	f, err := fsopen.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	lf, err := mapLogFile(f, l.alloc)
	if err != nil {
		f.Close()
		return nil, err
	}
	return lf, nil
}

// write appends e to the file and queues it. l.mu is held.
func (l *callLog) write(e *logEntry) error {
	if l.closed {
		return ErrClosed
	}
	if l.cur == nil {
		lf, err := l.start()
		if err != nil {
			return fmt.Errorf("store: start the call log %s: %w", l.path, err)
		}
		l.cur, l.size = lf, len(logMagic)
	}
	head := e.frame()
	if err := l.cur.put(l.size, head, e.val); err != nil {
		return fmt.Errorf("store: write the call log %s: %w", l.path, err)
	}
	l.size += len(head) + len(e.val)
	l.written++
	e.n = l.written
	l.queue = append(l.queue, e)
	l.latest[string(callKey(e.session, e.call))] = e
	if !l.armed {
		l.armed = true
		l.timer.Reset(l.delay)
	}
	return nil
}

// waiting returns the queued entries, for a commit to apply. When the log has grown large
// and none is retired, it retires it first (see maxLogBytes): every entry of the retired
// file is then among those returned.
func (l *callLog) waiting() []*logEntry {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > l.max && l.retired == 0 && len(l.queue) > 0 && !l.closed {
		if err := l.retire(); err != nil {
			// The log grows on until a retirement works; nothing is lost.
			l.log.Warn("the call log could not be retired", "err", err)
		}
	}
	return l.queue[:len(l.queue):len(l.queue)]
}

// retire makes the log the retired one, at oldPath, and starts a new one at path: the empty
// file a retirement left at oldPath, swapped in with one rename (RENAME_EXCHANGE), so that
// the two files' pages are written again and again rather than faulted in fresh; or, where
// the file system cannot swap, a new file. l.mu is held.
func (l *callLog) retire() error {
	if l.old != nil {
		if err := unix.Renameat2(unix.AT_FDCWD, l.path, unix.AT_FDCWD, l.oldPath, unix.RENAME_EXCHANGE); err == nil {
			l.cur, l.old = l.old, l.cur
			l.size, l.oldEnd = len(logMagic), l.size
			l.retired = l.written
			return nil
		}
		// The rename below replaces it.
		l.old.close()
		l.old = nil
	}
	if err := os.Rename(l.path, l.oldPath); err != nil {
		return fmt.Errorf("store: retire the call log: %w", err)
	}
	lf, err := l.start()
	if err != nil {
		// Back to the old file: appends go on where they were.
		_ = os.Rename(l.oldPath, l.path)
		return fmt.Errorf("store: start a new call log: %w", err)
	}
	l.cur, l.old = lf, l.cur
	l.size, l.oldEnd = len(logMagic), l.size
	l.retired = l.written
	return nil
}

// committed drops from the queue the entries a commit has just written to bbolt: those up to
// the last of done, a snapshot that waiting returned (another commit may have dropped some of
// them already). It empties the retired log once all its entries are committed, and the
// current one once nothing waits.
func (l *callLog) committed(done []*logEntry) error {
	if l == nil || len(done) == 0 {
		return nil
	}
	upTo := done[len(done)-1].n
	l.mu.Lock()
	defer l.mu.Unlock()
	k := 0
	for k < len(l.queue) && l.queue[k].n <= upTo {
		e := l.queue[k]
		if key := callKey(e.session, e.call); l.latest[string(key)] == e {
			delete(l.latest, string(key))
		}
		k++
	}
	l.queue = append([]*logEntry(nil), l.queue[k:]...)
	var err error
	if l.retired != 0 && l.retired <= upTo {
		l.retired = 0
		if rerr := l.old.empty(l.oldEnd); rerr != nil {
			// Not to be used again; its entries are committed, so it may go.
			l.old.close()
			l.old = nil
			err = fmt.Errorf("store: empty the retired call log: %w", rerr)
			if rerr := os.Remove(l.oldPath); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = fmt.Errorf("store: remove the retired call log: %w", rerr)
			}
		}
	}
	if len(l.queue) == 0 {
		if rerr := l.cur.empty(l.size); rerr != nil {
			// The committed entries stay: replaying them again is harmless.
			if err == nil {
				err = fmt.Errorf("store: empty the call log %s: %w", l.path, rerr)
			}
		} else {
			l.size = len(logMagic)
		}
		return err
	}
	if !l.armed && !l.closed {
		l.armed = true
		l.timer.Reset(l.delay)
	}
	return err
}

// flushLog commits what waits in the log (the timer's work).
func (s *Store) flushLog() {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return
	}
	s.flushes.Add(1)
	s.closeMu.Unlock()
	defer s.flushes.Done()
	s.clog.mu.Lock()
	s.clog.armed = false
	s.clog.mu.Unlock()
	if err := s.update(func(*bolt.Tx) error { return nil }); err != nil && !errors.Is(err, ErrClosed) {
		s.log.Error("committing the call log failed; its entries stay in the log", "err", err)
	}
	if s.opts.logFlushed != nil {
		s.opts.logFlushed()
	}
}

// closeLog commits what waits and removes the log. It runs in Close, after the last flush.
func (s *Store) closeLog() error {
	l := s.clog
	if l == nil {
		return nil
	}
	l.mu.Lock()
	l.closed = true
	l.timer.Stop()
	l.mu.Unlock()
	s.flushes.Wait()
	var err error
	// Nothing is written to the log any more, and entries leave it only once committed:
	// an empty queue now stays empty, and needs no transaction (a commit writes pages).
	if len(l.waiting()) > 0 {
		var q []*logEntry
		err = s.db.Update(func(tx *bolt.Tx) error {
			q = l.waiting() // inside the transaction, as in commit
			return applyEntries(tx, q)
		})
		if err == nil {
			err = l.committed(q)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && len(l.queue) == 0 {
		// Every entry is committed, those of a retired log too: both files go (if the
		// log was ever started).
		for _, p := range []string{l.path, l.oldPath} {
			if rerr := os.Remove(p); err == nil && rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = rerr
			}
		}
	}
	for _, lf := range []*logFile{l.cur, l.old} {
		if lf == nil {
			continue
		}
		if cerr := lf.close(); err == nil {
			err = cerr
		}
	}
	return err
}

func applyEntries(tx *bolt.Tx, entries []*logEntry) error {
	for _, e := range entries {
		if err := e.apply(tx); err != nil {
			return err
		}
	}
	return nil
}

// createLogged is CreateCall with the log on: r is complete and val is its encoding.
func (s *Store) createLogged(r *protocol.CallRecord, val []byte) error {
	l := s.clog
	key := callKey(r.SessionID, r.CallID)
	l.mu.Lock()
	defer l.mu.Unlock()
	exists := l.latest[string(key)] != nil
	if !exists {
		if err := s.db.View(func(tx *bolt.Tx) error {
			exists = tx.Bucket(bucketCallIndex).Get(key) != nil
			return nil
		}); err != nil {
			return mapBoltErr(err)
		}
	}
	if exists {
		return fmt.Errorf("%w: call %q already exists in session %q", ErrDuplicate, r.CallID, r.SessionID)
	}
	seq := l.lastSeq + 1
	if n := s.now().UnixNano(); n > 0 && uint64(n) > seq {
		seq = uint64(n)
	}
	e := &logEntry{seq: seq, session: r.SessionID, call: r.CallID, val: val, flags: entryCreated, unfinished: unfinished(r.Status)}
	if e.unfinished {
		e.flags |= entryOpen
	}
	if err := l.write(e); err != nil {
		return err
	}
	l.lastSeq = seq
	return nil
}

// updateLogged is UpdateCall with the log on. fn runs outside the lock, on a decoded copy;
// if the call changed meanwhile, it runs again on the new state.
func (s *Store) updateLogged(sessionID, callID string, fn func(*protocol.CallRecord)) error {
	l := s.clog
	key := string(callKey(sessionID, callID))
	for {
		l.mu.Lock()
		cur := l.latest[key]
		var (
			seq  uint64
			val  []byte
			open bool
		)
		if cur != nil {
			seq, val, open = cur.seq, cur.val, cur.unfinished
		} else {
			err := s.db.View(func(tx *bolt.Tx) error {
				k := tx.Bucket(bucketCallIndex).Get([]byte(key))
				if k == nil {
					return fmt.Errorf("%w: no call %q in session %q", ErrNotFound, callID, sessionID)
				}
				seq = binary.BigEndian.Uint64(k)
				val = bytes.Clone(tx.Bucket(bucketCalls).Get(k))
				open = tx.Bucket(bucketUnfinished).Get(k) != nil
				return nil
			})
			if err != nil {
				l.mu.Unlock()
				return mapBoltErr(err)
			}
		}
		l.mu.Unlock()

		var rec protocol.CallRecord
		if err := decodeCall(val, &rec); err != nil {
			return fmt.Errorf("%w: call %q of session %q has a damaged record: %v", ErrCorrupt, callID, sessionID, err)
		}
		if err := safeCall(func(*bolt.Tx) error { fn(&rec); return nil }, nil); err != nil {
			return err
		}
		rec.SessionID, rec.CallID = sessionID, callID
		nv, err := encodeCall(&rec)
		if err != nil {
			return fmt.Errorf("store: encode call %s: %w", callID, err)
		}
		e := &logEntry{seq: seq, session: sessionID, call: callID, val: nv, unfinished: unfinished(rec.Status)}
		switch now := e.unfinished; {
		case now && !open:
			e.flags = entryOpen
		case !now && open:
			e.flags = entryClosed
		}

		l.mu.Lock()
		if l.latest[key] != cur {
			l.mu.Unlock()
			continue // changed while fn ran: again, on the new state
		}
		err = l.write(e)
		l.mu.Unlock()
		return err
	}
}
