package store

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/restic/chunker"
	bolt "go.etcd.io/bbolt"
)

// Content-defined chunking of stored file contents: a small edit of a large file changes one
// or two chunks, so ten edits of a 1 MiB file store about 1 MiB and twenty chunks, not 10 MiB.
const (
	contentMinChunk  = 2 << 10
	contentMaxChunk  = 64 << 10
	contentAvgBits   = 13 // 8 KiB on average
	contentChunkPoly = chunker.Pol(0x3DA3358B4DC173)
)

// ContentID is the id of stored content: the hex SHA-256 of its bytes.
func ContentID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

var chunkers = sync.Pool{New: func() any {
	c := chunker.NewWithBoundaries(bytes.NewReader(nil), contentChunkPoly, contentMinChunk, contentMaxChunk)
	c.SetAverageBits(contentAvgBits)
	return c
}}

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, contentMaxChunk); return &b }}

// PutContent stores data (if it is not stored yet) and returns its ContentID. The content
// is split into content-defined chunks, each stored once (deflated when that makes it
// smaller); the manifest and its new chunks are one transaction.
func (s *Store) PutContent(data []byte) (string, error) {
	ids, err := s.PutContents([][]byte{data})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// PutContents is PutContent of many contents in one transaction (a first look at a
// workspace stores thousands of files).
func (s *Store) PutContents(datas [][]byte) ([]string, error) {
	s.contentMu.RLock()
	defer s.contentMu.RUnlock()
	ids := make([]string, len(datas))
	var todo []*prepared
	for i, data := range datas {
		sum := sha256.Sum256(data)
		ids[i] = hex.EncodeToString(sum[:])
		if s.HasContent(ids[i]) {
			continue
		}
		p, err := s.prepare(sum, data)
		if err != nil {
			return nil, err
		}
		todo = append(todo, p)
	}
	if len(todo) == 0 {
		return ids, nil
	}
	err := s.update(func(tx *bolt.Tx) error {
		chunks, contents := tx.Bucket(bucketChunks), tx.Bucket(bucketContent)
		for _, p := range todo {
			if contents.Get(p.sum[:]) != nil {
				continue
			}
			for i, pc := range p.pieces {
				if chunks.Get(pc.sum[:]) != nil {
					continue
				}
				v := p.enc[i]
				if v == nil {
					v = encodeChunk(pc.data)
				}
				if err := chunks.Put(pc.sum[:], v); err != nil {
					return err
				}
			}
			if err := contents.Put(p.sum[:], p.manifest); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

type piece struct {
	sum  [32]byte
	data []byte
}

// prepared is a content split and compressed, ready to be written.
type prepared struct {
	sum      [32]byte
	pieces   []piece
	enc      [][]byte
	manifest []byte
}

// prepare splits data into chunks and compresses the ones not stored yet, outside any
// write transaction (bbolt runs one at a time: work done inside it holds up every writer).
func (s *Store) prepare(sum [32]byte, data []byte) (*prepared, error) {
	var pieces []piece
	c := chunkers.Get().(*chunker.Chunker)
	c.ResetWithBoundaries(bytes.NewReader(data), contentChunkPoly, contentMinChunk, contentMaxChunk)
	c.SetAverageBits(contentAvgBits)
	bufp := chunkBufs.Get().(*[]byte)
	for {
		ch, err := c.Next(*bufp)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			chunkers.Put(c)
			chunkBufs.Put(bufp)
			return nil, fmt.Errorf("store: chunking content: %w", err)
		}
		// ch.Data aliases the buffer: the chunk is a slice of data itself.
		part := data[ch.Start : ch.Start+ch.Length]
		pieces = append(pieces, piece{sha256.Sum256(part), part})
	}
	chunkers.Put(c)
	chunkBufs.Put(bufp)

	manifest := make([]byte, 16, 16+32*len(pieces))
	binary.BigEndian.PutUint64(manifest, uint64(s.now().UnixNano()))
	binary.BigEndian.PutUint64(manifest[8:], uint64(len(data)))
	for _, p := range pieces {
		manifest = append(manifest, p.sum[:]...)
	}
	missing := make([]bool, len(pieces))
	err := s.view(func(tx *bolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		for i, p := range pieces {
			missing[i] = chunks.Get(p.sum[:]) == nil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	enc := make([][]byte, len(pieces))
	for i, p := range pieces {
		if missing[i] {
			enc[i] = encodeChunk(p.data)
		}
	}
	return &prepared{sum: sum, pieces: pieces, enc: enc, manifest: manifest}, nil
}

// flateWriters are reused: a new one allocates its tables, most of a chunk's cost.
var flateWriters = sync.Pool{New: func() any { w, _ := flate.NewWriter(io.Discard, flate.BestSpeed); return w }}

func encodeChunk(data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data)/2 + 64)
	b.WriteByte(1)
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(&b)
	_, _ = w.Write(data)
	_ = w.Close()
	flateWriters.Put(w)
	if b.Len() < len(data)+1 {
		return b.Bytes()
	}
	return append([]byte{0}, data...)
}

var flateReaders sync.Pool

func decodeChunk(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: empty chunk", ErrCorrupt)
	}
	if v[0] == 0 {
		return bytes.Clone(v[1:]), nil
	}
	r, _ := flateReaders.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(bytes.NewReader(v[1:]))
	} else {
		_ = r.(flate.Resetter).Reset(bytes.NewReader(v[1:]), nil)
	}
	out, err := io.ReadAll(io.LimitReader(r, contentMaxChunk+1))
	flateReaders.Put(r)
	if err != nil {
		return nil, fmt.Errorf("%w: chunk: %v", ErrCorrupt, err)
	}
	return out, nil
}

func contentKey(id string) ([]byte, bool) {
	k, err := hex.DecodeString(id)
	return k, err == nil && len(k) == sha256.Size
}

// HasContent reports whether content with this id is stored.
func (s *Store) HasContent(id string) bool {
	k, ok := contentKey(id)
	if !ok {
		return false
	}
	found := false
	_ = s.view(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketContent).Get(k) != nil
		return nil
	})
	return found
}

// Content returns stored content by id, checked against its id. Unknown id -> ErrNotFound.
func (s *Store) Content(id string) ([]byte, error) {
	k, ok := contentKey(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a content id", ErrInvalid, id)
	}
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketContent).Get(k)
		if m == nil {
			return fmt.Errorf("%w: no content %s", ErrNotFound, id)
		}
		if len(m) < 16 || (len(m)-16)%32 != 0 {
			return fmt.Errorf("%w: content %s has a malformed manifest", ErrCorrupt, id)
		}
		size := binary.BigEndian.Uint64(m[8:])
		out = make([]byte, 0, min(size, 1<<30))
		chunks := tx.Bucket(bucketChunks)
		for i := 16; i < len(m); i += 32 {
			v := chunks.Get(m[i : i+32])
			if v == nil {
				return fmt.Errorf("%w: content %s lacks a chunk", ErrCorrupt, id)
			}
			d, err := decodeChunk(v)
			if err != nil {
				return err
			}
			out = append(out, d...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(out); !bytes.Equal(sum[:], k) {
		return nil, fmt.Errorf("%w: content %s does not match its id", ErrCorrupt, id)
	}
	return out, nil
}
