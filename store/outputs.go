package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/toolsd/toolsd/protocol"
)

const (
	// ChunkSize is how many bytes of an output one stored chunk holds; an OutputWriter buffers
	// at most this much.
	ChunkSize = 256 << 10
	// DefaultReadLimit is the number of lines ReadOutput returns when limit <= 0.
	DefaultReadLimit = 2000
	// DefaultMaxPageBytes caps the content of one ReadOutput page (Options.MaxPageBytes).
	DefaultMaxPageBytes = 1 << 20
)

// outputMeta is the JSON value under keyOutMeta in an output's bucket.
type outputMeta struct {
	SessionID string    `json:"sessionID"`
	CallID    string    `json:"callID"`
	CreatedAt time.Time `json:"createdAt"`
	ChunkSize int       `json:"chunkSize"`
	Chunks    int       `json:"chunks"`
	Bytes     int64     `json:"bytes"`
	Newlines  int64     `json:"newlines"`
	// EndsWithNewline: the last byte is "\n" (so the last line is complete).
	EndsWithNewline bool `json:"endsWithNewline"`
	// Complete: the writer closed, or the daemon died and Open finalized what it committed
	// (then Partial is set too).
	Complete bool `json:"complete"`
	Partial  bool `json:"partial,omitempty"`
}

// lines is the line count: a final line without "\n" counts.
func (m *outputMeta) lines() int {
	n := int(m.Newlines)
	if m.Bytes > 0 && !m.EndsWithNewline {
		n++
	}
	return n
}

func chunkKey(i int) []byte { return append([]byte{'c'}, be32(uint32(i))...) }
func lineKey(i int) []byte  { return append([]byte{'n'}, be32(uint32(i))...) }

func putMeta(b *bolt.Bucket, m *outputMeta) error {
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return b.Put(keyOutMeta, v)
}

func getMeta(b *bolt.Bucket) (outputMeta, error) {
	var m outputMeta
	v := b.Get(keyOutMeta)
	if v == nil {
		return m, fmt.Errorf("%w: output without meta", ErrCorrupt)
	}
	err := json.Unmarshal(v, &m)
	if err == nil && m.ChunkSize <= 0 {
		err = errors.New("chunk size 0")
	}
	if err != nil {
		return m, fmt.Errorf("%w: output meta: %v", ErrCorrupt, err)
	}
	return m, nil
}

func newOutputID(now time.Time) string {
	var b [14]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixNano()))
	_, _ = rand.Read(b[8:])
	return "out_" + hex.EncodeToString(b[:])
}

// OutputWriter streams one call's full output into the store. It holds at most one chunk
// (ChunkSize bytes) in memory and commits each full chunk as it goes. It is owned by one
// goroutine and not safe for concurrent use. Its ID is valid from NewOutput on; the output is
// readable in full after Close (and in part, up to the last committed chunk, before).
type OutputWriter struct {
	s    *Store
	id   string
	buf  []byte
	meta outputMeta
	err  error // sticky
	done bool
}

// NewOutput starts a new output of a call.
func (s *Store) NewOutput(sessionID, callID string) (*OutputWriter, error) {
	now := s.now()
	w := &OutputWriter{s: s, id: newOutputID(now), meta: outputMeta{
		SessionID: sessionID, CallID: callID, CreatedAt: now, ChunkSize: s.chunkSize(),
	}}
	err := s.update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketOutputs).CreateBucket([]byte(w.id))
		if err != nil {
			return fmt.Errorf("store: new output %s: %w", w.id, err)
		}
		if err := putMeta(b, &w.meta); err != nil {
			return err
		}
		if err := tx.Bucket(bucketOutputsByTime).Put(timeKey(now, w.id), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketOutputsOpen).Put([]byte(w.id), nil)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

func timeKey(t time.Time, id string) []byte {
	return append(be64(uint64(t.UnixNano())), id...)
}

// ID is the output's id (what protocol results call outputID).
func (w *OutputWriter) ID() string { return w.id }

// Write appends p to the output, committing every full chunk.
func (w *OutputWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.done {
		return 0, fmt.Errorf("store: write to closed output %s", w.id)
	}
	n := 0
	cs := w.meta.ChunkSize
	for len(p) > 0 {
		room := cs - len(w.buf)
		take := min(room, len(p))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		n += take
		if len(w.buf) == cs {
			if err := w.flush(false); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// flush commits the buffered bytes as the next chunk (if any) and, with final, marks the
// output complete.
func (w *OutputWriter) flush(final bool) error {
	m := w.meta
	data := w.buf
	idx := m.Chunks
	nl := int64(bytes.Count(data, []byte{'\n'}))
	if len(data) > 0 {
		m.Chunks++
		m.Bytes += int64(len(data))
		m.Newlines += nl
		m.EndsWithNewline = data[len(data)-1] == '\n'
	}
	if final {
		m.Complete = true
	}
	err := w.s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutputs).Bucket([]byte(w.id))
		if b == nil {
			return fmt.Errorf("%w: output %s was deleted while it was written", ErrNotFound, w.id)
		}
		if len(data) > 0 {
			if err := b.Put(chunkKey(idx), data); err != nil {
				return err
			}
			rec := make([]byte, 12)
			binary.BigEndian.PutUint64(rec, uint64(w.meta.Newlines))
			binary.BigEndian.PutUint32(rec[8:], uint32(nl))
			if err := b.Put(lineKey(idx), rec); err != nil {
				return err
			}
		}
		if err := putMeta(b, &m); err != nil {
			return err
		}
		if final {
			return tx.Bucket(bucketOutputsOpen).Delete([]byte(w.id))
		}
		return nil
	})
	if err != nil {
		w.err = fmt.Errorf("store: output %s: %w", w.id, err)
		return w.err
	}
	w.meta = m
	w.buf = w.buf[:0]
	return nil
}

// Close commits the rest and the totals. The output is then readable in full.
func (w *OutputWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return nil
	}
	if err := w.flush(true); err != nil {
		return err
	}
	w.done = true
	w.buf = nil
	return nil
}

// Abort drops the output and everything written to it. After Close it does nothing, so
// `defer w.Abort()` is a fine way to drop outputs whose writer is never closed.
func (w *OutputWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.buf = nil
	err := w.s.update(func(tx *bolt.Tx) error {
		return deleteOutput(tx, w.id, w.meta.CreatedAt)
	})
	if err != nil && !errors.Is(err, ErrClosed) {
		w.s.log.Warn("could not drop an aborted output", "outputID", w.id, "err", err)
	}
}

func deleteOutput(tx *bolt.Tx, id string, created time.Time) error {
	if err := tx.Bucket(bucketOutputs).DeleteBucket([]byte(id)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	if err := tx.Bucket(bucketOutputsByTime).Delete(timeKey(created, id)); err != nil {
		return err
	}
	return tx.Bucket(bucketOutputsOpen).Delete([]byte(id))
}

// finalizeOpenOutputs marks the outputs whose writer never closed (the daemon died) complete
// and partial: they keep what was committed.
func finalizeOpenOutputs(tx *bolt.Tx) error {
	open := tx.Bucket(bucketOutputsOpen)
	var ids [][]byte
	_ = open.ForEach(func(k, _ []byte) error {
		ids = append(ids, bytes.Clone(k))
		return nil
	})
	for _, id := range ids {
		if err := open.Delete(id); err != nil {
			return err
		}
		b := tx.Bucket(bucketOutputs).Bucket(id)
		if b == nil {
			continue
		}
		m, err := getMeta(b)
		if err != nil {
			continue
		}
		m.Complete, m.Partial = true, true
		if err := putMeta(b, &m); err != nil {
			return err
		}
	}
	return nil
}

// ReadOutput returns lines [offset, offset+limit) of an output (offset 0-based; limit <= 0
// means DefaultReadLimit) joined by "\n", without a trailing newline, with the totals. Lines
// are split on "\n" only: a "\r" before it is kept. A last line without "\n" counts as a line.
// An offset past the end gives empty content, not an error. A page holds at most
// Options.MaxPageBytes of content: it ends early at a line boundary (Lines says how many came
// back, so the next page starts at Offset+Lines); a single line longer than that is cut, and
// a marker saying how many bytes were left out ends it. Only the chunks the page touches are
// read. Unknown id -> ErrNotFound; pruned by retention -> ErrExpired.
func (s *Store) ReadOutput(outputID string, offset, limit int) (*protocol.OutputsReadResult, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: offset %d: lines are numbered from 0", ErrInvalid, offset)
	}
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	res := &protocol.OutputsReadResult{Offset: offset}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutputs).Bucket([]byte(outputID))
		if b == nil {
			if v := tx.Bucket(bucketOutputsExpired).Get([]byte(outputID)); len(v) == 8 && outputID != "" {
				at := time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
				return fmt.Errorf("%w (%w): output %s was older than the retention period and was deleted at %s", ErrExpired, ErrNotFound, outputID, at.Format(time.RFC3339))
			}
			return fmt.Errorf("%w: no output %q", ErrNotFound, outputID)
		}
		m, err := getMeta(b)
		if err != nil {
			return err
		}
		r := &outReader{b: b, m: m}
		res.TotalLines, res.TotalBytes = m.lines(), m.Bytes
		content, n, err := r.read(offset, limit, s.opts.MaxPageBytes)
		if err != nil {
			return fmt.Errorf("output %s: %w", outputID, err)
		}
		res.Content, res.Lines = content, n
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ReadLines is ReadOutput shaped for registry.OutputReader.
func (s *Store) ReadLines(ctx context.Context, outputID string, offset, limit int) (string, int, int64, error) {
	if err := ctx.Err(); err != nil {
		return "", 0, 0, err
	}
	r, err := s.ReadOutput(outputID, offset, limit)
	if err != nil {
		return "", 0, 0, err
	}
	return r.Content, r.TotalLines, r.TotalBytes, nil
}

// outReader reads one output inside a read transaction.
type outReader struct {
	b *bolt.Bucket
	m outputMeta
}

func (r *outReader) chunk(i int) ([]byte, error) {
	v := r.b.Get(chunkKey(i))
	if v == nil {
		return nil, fmt.Errorf("%w: chunk %d missing", ErrCorrupt, i)
	}
	return v, nil
}

// lineRec is (newlines before chunk i, newlines in chunk i).
func (r *outReader) lineRec(i int) (int64, int64, error) {
	v := r.b.Get(lineKey(i))
	if len(v) != 12 {
		return 0, 0, fmt.Errorf("%w: line record %d missing", ErrCorrupt, i)
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint32(v[8:])), nil
}

// newlinePos is the byte position of the k-th "\n" (1-based, k <= m.Newlines): a binary search
// over the per-chunk line records, then a scan of one chunk.
func (r *outReader) newlinePos(k int64) (int64, error) {
	var ferr error
	c := sort.Search(r.m.Chunks, func(i int) bool {
		before, n, err := r.lineRec(i)
		if err != nil {
			ferr = err
			return true
		}
		return before+n >= k
	})
	if ferr != nil {
		return 0, ferr
	}
	if c >= r.m.Chunks {
		return 0, fmt.Errorf("%w: newline %d not found", ErrCorrupt, k)
	}
	before, _, _ := r.lineRec(c)
	data, err := r.chunk(c)
	if err != nil {
		return 0, err
	}
	need := k - before
	off := 0
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("%w: chunk %d has fewer newlines than its record says", ErrCorrupt, c)
		}
		off += i
		need--
		if need == 0 {
			return int64(c)*int64(r.m.ChunkSize) + int64(off), nil
		}
		off++
	}
}

// lineStart is the byte position where line L (0-based) starts.
func (r *outReader) lineStart(L int) (int64, error) {
	if L == 0 {
		return 0, nil
	}
	p, err := r.newlinePos(int64(L))
	return p + 1, err
}

// lineEnd is the byte position of the end of line L (its "\n", or the end of the output).
func (r *outReader) lineEnd(L int) (int64, error) {
	if int64(L)+1 <= r.m.Newlines {
		return r.newlinePos(int64(L) + 1)
	}
	return r.m.Bytes, nil
}

func (r *outReader) read(offset, limit, maxBytes int) (string, int, error) {
	total := r.m.lines()
	if offset >= total {
		return "", 0, nil
	}
	pos, err := r.lineStart(offset)
	if err != nil {
		return "", 0, err
	}
	cs := int64(r.m.ChunkSize)
	var out []byte
	n := 0
	for L := offset; L < total && n < limit; L++ {
		mark := len(out)
		if n > 0 {
			out = append(out, '\n')
		}
		// Copy line L from pos up to its "\n" or the end of the output.
		cut := false
		for pos < r.m.Bytes {
			data, err := r.chunk(int(pos / cs))
			if err != nil {
				return "", 0, err
			}
			data = data[pos%cs:]
			i := bytes.IndexByte(data, '\n')
			seg := data
			if i >= 0 {
				seg = data[:i]
			}
			if len(out)+len(seg) > maxBytes {
				cut = true
				break
			}
			out = append(out, seg...)
			pos += int64(len(seg))
			if i >= 0 {
				pos++ // past the "\n"
				break
			}
		}
		if !cut {
			n++
			continue
		}
		if n > 0 {
			// The page is full: stop before this line.
			out = out[:mark]
			break
		}
		// A single line longer than the page: keep its head and say what was left out.
		start, err := r.lineStart(L)
		if err != nil {
			return "", 0, err
		}
		end, err := r.lineEnd(L)
		if err != nil {
			return "", 0, err
		}
		keep := maxBytes
		for pos < start+int64(keep) && len(out) < keep {
			data, err := r.chunk(int(pos / cs))
			if err != nil {
				return "", 0, err
			}
			data = data[pos%cs:]
			take := min(len(data), keep-len(out))
			out = append(out, data[:take]...)
			pos += int64(take)
		}
		// Do not end inside a UTF-8 sequence.
		for i := 0; i < utf8.UTFMax-1 && len(out) > 0; i++ {
			if r, size := utf8.DecodeLastRune(out); r != utf8.RuneError || size > 1 {
				break
			}
			out = out[:len(out)-1]
		}
		out = fmt.Appendf(out, " … [toolsd: line %d is %d bytes long; cut here, %d bytes not shown]", L, end-start, end-start-int64(len(out)))
		n++
		break
	}
	return string(out), n, nil
}
