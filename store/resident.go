package store

import (
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// trimEvery is how many bytes of outputs may pass through bbolt's memory map between two
// trims of its resident pages.
const trimEvery = 8 << 20

// residentTrimmer keeps the resident size of bbolt's memory map from growing with the
// outputs that stream through it. bbolt reads every value through a read-only, shared
// mapping of the file (PROT_READ, MAP_SHARED): writing a large output faults in the chunks
// its leaf rewrites copy, and reading one back faults in every chunk, so without a trim the
// daemon's resident size grows to the size of the largest output it touched (clean page-cache
// pages, but resident all the same). For such a mapping MADV_DONTNEED only drops our page
// table entries; the data stays in the page cache and the file, and the next access faults
// it back in. The trim runs inside a read transaction, which holds bbolt's mmap lock, so the
// mapping cannot be replaced while it runs.
type residentTrimmer struct {
	since atomic.Int64 // bytes passed through the mapping since the last trim
}

// touched records n bytes passed through the mapping and trims when enough have.
func (s *Store) touched(n int) {
	if s.resident.since.Add(int64(n)) < trimEvery {
		return
	}
	s.resident.since.Store(0)
	_ = s.view(func(tx *bolt.Tx) error {
		info := s.db.Info()
		size := tx.Size()
		if info == nil || info.Data == 0 || size <= 0 {
			return nil
		}
		// The address and length come from bbolt's own mapping, held by this transaction;
		// a raw syscall keeps the address a uintptr.
		_, _, errno := unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(size), unix.MADV_DONTNEED)
		if errno != 0 {
			s.log.Debug("trimming the store's mapping failed", "err", errno)
		}
		return nil
	})
}
