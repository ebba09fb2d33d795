package builtin

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"
)

// Line indexes of large files: where every lineIndexStep-th line starts, kept for files
// read before so that paging through a huge file does not rescan it from the start.
const (
	lineIndexMinSize = 4 << 20
	lineIndexStep    = 16384
	lineIndexMax     = 32 // files remembered
)

// lineIndex is where lines of one version of a file start. Immutable once stored.
type lineIndex struct {
	size     int64
	mod      time.Time
	dev, ino uint64
	changed  int64 // the change time: unlike mod, no process can set it back (touch -d)
	total    int
	newlines int    // '\n' bytes in the first size bytes
	tail     []byte // the last (up to) 4 KiB of those bytes, to recognise an append
	step     int
	marks    []int64 // marks[k] is the offset of line k*step+1
}

const indexTailBytes = 4096

var lineIndexes struct {
	mu sync.Mutex // guards m
	m  map[string]*lineIndex
}

// lookupLineIndex returns the index of f (the file at abs, with info fi) if it describes
// this version. A file that only grew since (same inode, its old last 4 KiB unchanged: a
// log being appended to) gets its index extended over the new bytes, which are all that
// is read.
func lookupLineIndex(f io.ReaderAt, abs string, fi os.FileInfo) *lineIndex {
	lineIndexes.mu.Lock()
	ix := lineIndexes.m[abs]
	lineIndexes.mu.Unlock()
	if ix == nil || len(ix.marks) == 0 {
		return nil
	}
	dev, ino, changed := fileID(fi)
	if ix.dev != dev || ix.ino != ino {
		return nil
	}
	if ix.size == fi.Size() && ix.mod.Equal(fi.ModTime()) && ix.changed == changed {
		return ix
	}
	if fi.Size() <= ix.size || f == nil {
		return nil
	}
	// Grown: check the old end is still there, then index only the new bytes.
	old := make([]byte, len(ix.tail))
	if _, err := f.ReadAt(old, ix.size-int64(len(old))); err != nil || !bytes.Equal(old, ix.tail) {
		return nil
	}
	b := &indexBuilder{step: ix.step, marks: append([]int64(nil), ix.marks...)}
	nl := ix.newlines
	bp := getReadBuf()
	defer readBufs.Put(bp)
	buf := *bp
	var last byte
	if len(ix.tail) > 0 {
		last = ix.tail[len(ix.tail)-1]
	}
	var tail []byte
	for off := ix.size; off < fi.Size(); {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), fi.Size()-off)], off)
		if n > 0 {
			c := bytes.Count(buf[:n], []byte{'\n'})
			b.feed(buf[:n], off, nl+1, nl+1+c)
			nl += c
			last = buf[n-1]
			tail = append(tail, buf[max(0, n-indexTailBytes):n]...)
			if len(tail) > indexTailBytes {
				tail = tail[len(tail)-indexTailBytes:]
			}
			off += int64(n)
		}
		if err != nil && off < fi.Size() {
			return nil
		}
	}
	if len(tail) < indexTailBytes {
		tail = append(append([]byte(nil), ix.tail[max(0, len(ix.tail)-(indexTailBytes-len(tail))):]...), tail...)
	}
	total := nl
	if last != '\n' {
		total++
	}
	nix := &lineIndex{size: fi.Size(), mod: fi.ModTime(), dev: dev, ino: ino, changed: changed, total: total, newlines: nl, tail: tail, step: ix.step, marks: b.marks}
	putLineIndex(abs, nix)
	return nix
}

// storeLineIndex keeps the index a full read of f built.
func storeLineIndex(f io.ReaderAt, abs string, fi os.FileInfo, total int, b *indexBuilder) {
	if len(b.marks) == 0 {
		return
	}
	tail := make([]byte, min(fi.Size(), indexTailBytes))
	if _, err := f.ReadAt(tail, fi.Size()-int64(len(tail))); err != nil {
		return
	}
	nl := total
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		nl--
	}
	dev, ino, changed := fileID(fi)
	putLineIndex(abs, &lineIndex{size: fi.Size(), mod: fi.ModTime(), dev: dev, ino: ino, changed: changed, total: total, newlines: nl, tail: tail, step: b.step, marks: b.marks})
}

func putLineIndex(abs string, ix *lineIndex) {
	lineIndexes.mu.Lock()
	defer lineIndexes.mu.Unlock()
	if lineIndexes.m == nil {
		lineIndexes.m = map[string]*lineIndex{}
	}
	if _, ok := lineIndexes.m[abs]; !ok && len(lineIndexes.m) >= lineIndexMax {
		for k := range lineIndexes.m { // evict one at random
			delete(lineIndexes.m, k)
			break
		}
	}
	lineIndexes.m[abs] = ix
}

// indexBuilder records line starts while a file is read.
type indexBuilder struct {
	step  int
	marks []int64
}

// feed takes a chunk read at offset base; lineStart and lineEnd are the numbers of the
// lines holding its first byte and the byte after it.
func (b *indexBuilder) feed(chunk []byte, base int64, lineStart, lineEnd int) {
	for {
		next := len(b.marks)*b.step + 1
		if next == 1 {
			if base != 0 {
				return
			}
			b.marks = append(b.marks, 0)
			continue
		}
		if next <= lineStart || next > lineEnd {
			return
		}
		i := nthNewline(chunk, next-lineStart)
		if i < 0 {
			return
		}
		b.marks = append(b.marks, base+int64(i)+1)
	}
}

// nthNewline returns the index of the n-th (1-based) newline of b, or -1.
func nthNewline(b []byte, n int) int {
	off := 0
	for off < len(b) {
		end := min(off+4096, len(b))
		if c := bytes.Count(b[off:end], []byte{'\n'}); c < n {
			n -= c
			off = end
			continue
		}
		for {
			i := bytes.IndexByte(b[off:end], '\n')
			n--
			if n == 0 {
				return off + i
			}
			off += i + 1
		}
	}
	return -1
}
