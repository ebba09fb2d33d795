package store

// Earlier toolsds kept calls' records in a call log beside the store (name.log, and
// name.log.old while a large one waited for its commit) and committed them to bbolt in
// batches, so a daemon killed between an append and its commit left records only there. This
// toolsd writes no such log. The first Open of a store an earlier toolsd wrote imports what it
// left, in the transaction that also sets keyMetaNoCallLog, before anything reads the store,
// and then removes the files. A store this toolsd made has the key from the start. With the
// key set, a file at a log's path is never read: whatever put it there (a tool process that
// can write the store's folder), it cannot add records. One caveat: an earlier toolsd started
// on the store afterwards (a downgrade) and killed leaves a log this toolsd does not import;
// Open warns about it.
//
// The format: the line logMagic, then entries, zeros after the last. An entry is the length
// and the CRC-32C of its payload (4 bytes each, little endian), then the payload: one byte of
// flags, uvarint seq, the session and the call id (each uvarint length, bytes), and the
// call's value under seq as encodeCall writes it. A torn last entry (the process died while
// writing it) fails its checksum and ends the import: the call it would have recorded never
// got an answer.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/toolsd/toolsd/internal/fsopen"
)

const logMagic = "toolsd call log 1\n"

const (
	entryCreated = 1 << iota // a new call: add it to the call index and its session's list
	entryOpen                // it became unfinished: add it to the unfinished index
	entryClosed              // it finished: remove it from the unfinished index
)

// oldLogs are the call logs an earlier toolsd may have left, in the order they are imported.
func oldLogs(path string) []string { return []string{path + ".log.old", path + ".log"} }

// logEntry is one change of one call: its whole value under its sequence, and which
// indexes change with it.
type logEntry struct {
	seq           uint64
	session, call string
	val           []byte
	flags         byte
}

// importCallLog imports the call logs an earlier toolsd left, once per store, and removes them.
func (s *Store) importCallLog() error {
	imported := false
	_ = s.db.View(func(tx *bolt.Tx) error {
		imported = tx.Bucket(bucketMeta).Get(keyMetaNoCallLog) != nil
		return nil
	})
	if imported {
		for _, p := range oldLogs(s.path) {
			if _, err := os.Lstat(p); err == nil {
				s.log.Warn("a call log beside the store is not read: this store's call log was imported already (an earlier toolsd, started on it since, wrote this one; or another process did)", "file", p)
			}
		}
		return nil
	}
	var (
		entries []*logEntry
		found   []string
	)
	for _, p := range oldLogs(s.path) {
		data, err := readOldLog(p)
		if err != nil {
			return err
		}
		if data == nil {
			continue
		}
		if !bytes.HasPrefix(data, []byte(logMagic)) {
			s.log.Warn("left alone a file at a call log's path that is not a call log", "file", p)
			continue
		}
		es, rest := parseLog(data[len(logMagic):])
		if rest > 0 {
			s.log.Warn("ignored the end of a call log: a write that did not finish, or damage", "file", p, "bytes", rest)
		}
		entries = append(entries, es...)
		found = append(found, p)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, e := range entries {
			if err := e.apply(tx); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyMetaNoCallLog, []byte{1})
	})
	if err != nil {
		return fmt.Errorf("store: import the call log beside %s: %w", s.path, err)
	}
	if len(entries) > 0 {
		s.log.Info("imported the call log an earlier toolsd left", "entries", len(entries))
	}
	for _, p := range found {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("could not remove an imported call log; it is not read again", "file", p, "err", err)
		}
	}
	return nil
}

// readOldLog reads the file at path, nil if there is none. Anything but a regular file is
// ErrCorrupt: reading a FIFO would hang Open.
func readOldLog(path string) ([]byte, error) {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	f, err := fsopen.OpenFile(path, os.O_RDONLY, 0)
	if te := (*fsopen.TypeError)(nil); errors.As(err, &te) {
		return nil, fmt.Errorf("%w: the call log %v: move it away", ErrCorrupt, te)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open the call log: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("store: read the call log %s: %w", path, err)
	}
	return data, nil
}

// parseLog returns the entries in p (a log after its magic), and how many bytes at its end
// were not a whole entry; the zeros after the last entry do not count.
func parseLog(p []byte) (entries []*logEntry, rest int) {
	table := crc32.MakeTable(crc32.Castagnoli)
	for len(p) >= 8 {
		n := int(binary.LittleEndian.Uint32(p))
		if n > len(p)-8 || crc32.Checksum(p[8:8+n], table) != binary.LittleEndian.Uint32(p[4:]) {
			break
		}
		e, ok := parseEntry(p[8 : 8+n])
		if !ok {
			break
		}
		entries = append(entries, e)
		p = p[8+n:]
	}
	if len(bytes.TrimRight(p, "\x00")) == 0 {
		return entries, 0
	}
	return entries, len(p)
}

func parseEntry(b []byte) (*logEntry, bool) {
	if len(b) < 1 {
		return nil, false
	}
	e := &logEntry{flags: b[0]}
	b = b[1:]
	var w int
	if e.seq, w = binary.Uvarint(b); w <= 0 {
		return nil, false
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
		return nil, false
	}
	e.val = b
	return e, true
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
