package store

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// The call log's files are written through a shared mapping: an entry copied into it is in
// the page cache at once, which is what survives kill -9, without a system call. A pwrite
// per entry cost a tenth of the daemon's CPU per call under 64 callers: the write itself,
// the file's time stamps, and the callers waiting on the log's lock meanwhile.
//
// A file's size is its capacity, allocated ahead (fallocate), so that a page first written
// never needs a block the file system has not reserved. Its entries end where a frame's
// head is zero: the bytes after the last entry are zero, because the file is allocated
// zeroed and emptied by zeroing what it held (resetting a page costs a store, not a fault).
// A file that held a huge entry is cut back when it is emptied.
const (
	logInitialBytes = 256 << 10 // a log file's first capacity
	logShrinkBytes  = 4 << 20   // past this, an emptied log file goes back to logInitialBytes
)

// logFile is one call log file, mapped whole and shared.
type logFile struct {
	f *os.File
	m []byte
	// alloc gives the file its size (allocate, tests replace it).
	alloc func(fd int, size int64) error
}

// allocate grows the file at fd to size with its blocks reserved, or, where the file system
// cannot reserve them, just to the size.
func allocate(fd int, size int64) error {
	err := unix.Fallocate(fd, 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = unix.Ftruncate(fd, size)
	}
	return err
}

// mapLogFile maps f, new and empty, with the magic at its start.
func mapLogFile(f *os.File, alloc func(fd int, size int64) error) (*logFile, error) {
	lf := &logFile{f: f, alloc: alloc}
	if err := lf.resize(logInitialBytes); err != nil {
		return nil, err
	}
	copy(lf.m, logMagic)
	return lf, nil
}

// resize gives the file the capacity size and maps it so. On a failure the file keeps its
// mapping and the capacity it had.
func (lf *logFile) resize(size int) error {
	fd := int(lf.f.Fd())
	if size > len(lf.m) {
		if err := lf.alloc(fd, int64(size)); err != nil {
			return err
		}
	}
	var (
		m   []byte
		err error
	)
	if lf.m == nil {
		m, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	} else {
		m, err = unix.Mremap(lf.m, size, unix.MREMAP_MAYMOVE)
	}
	if err != nil {
		return err
	}
	shrunk := size < len(lf.m)
	lf.m = m
	if shrunk {
		return unix.Ftruncate(fd, int64(size))
	}
	return nil
}

// put copies an entry's parts to off, growing the file when they do not fit. The head
// (parts[0]) goes last, so that an entry is whole before its frame says so; a copy that
// faults is zeroed again, as far as it can be.
func (lf *logFile) put(off int, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if off+n > len(lf.m) {
		size := max(2*len(lf.m), (off+n+logInitialBytes-1)/logInitialBytes*logInitialBytes)
		if err := lf.resize(size); err != nil {
			return fmt.Errorf("make room for %d bytes: %w", n, err)
		}
	}
	err := guarded(func() {
		at := off + len(parts[0])
		for _, p := range parts[1:] {
			at += copy(lf.m[at:], p)
		}
		copy(lf.m[off:], parts[0])
	})
	if err != nil {
		_ = guarded(func() { clear(lf.m[off : off+n]) })
	}
	return err
}

// empty zeroes the entries, which end at end: the first one's frame first, so that a crash
// half way leaves a log without entries. A file that grew large is cut back.
func (lf *logFile) empty(end int) error {
	err := guarded(func() {
		start := len(logMagic)
		clear(lf.m[start:min(start+8, end)])
		clear(lf.m[start:end])
	})
	if err == nil && len(lf.m) > logShrinkBytes {
		err = lf.resize(logInitialBytes)
	}
	return err
}

// close unmaps and closes the file.
func (lf *logFile) close() error {
	err := unix.Munmap(lf.m)
	lf.m = nil
	if cerr := lf.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// guarded runs fn, turning a fault of the mapping (its file cut short behind the daemon's
// back, or a page the file system could not give it: SIGBUS) into an error instead of a
// crash.
func guarded(fn func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			err = errors.New("a page of the mapped file could not be written (the file was cut short, or its file system has no room)")
		}
	}()
	fn()
	return nil
}
