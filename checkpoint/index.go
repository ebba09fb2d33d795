package checkpoint

import (
	"github.com/google/btree"

	"github.com/toolsd/toolsd/store"
)

// pathIndex is what toolsd last saw of every tracked path, kept in path order (a B-tree), so
// that everything below a folder is one range: a path that disappears costs O(log n) plus
// what was below it, not a look at every entry. Reads may run concurrently; a write must
// not run with anything else (the Tracker writes only with syncMu and mu held).
type pathIndex struct {
	t *btree.BTreeG[entry]
}

type entry struct {
	path string
	st   store.FileState
}

func newIndex() *pathIndex {
	return &pathIndex{t: btree.NewG(32, func(a, b entry) bool { return a.path < b.path })}
}

func (x *pathIndex) get(p string) (store.FileState, bool) {
	e, ok := x.t.Get(entry{path: p})
	return e.st, ok
}

func (x *pathIndex) set(p string, s store.FileState) { x.t.ReplaceOrInsert(entry{path: p, st: s}) }

func (x *pathIndex) del(p string) { x.t.Delete(entry{path: p}) }

func (x *pathIndex) len() int { return x.t.Len() }

// clone is a copy of the index, made at once (the two share nodes until one is written):
// readers of the copy need no lock while the original changes.
func (x *pathIndex) clone() *pathIndex { return &pathIndex{t: x.t.Clone()} }

// ascend yields every path and its state, in order.
func (x *pathIndex) ascend(yield func(p string, s *store.FileState) bool) {
	x.t.Ascend(func(e entry) bool { return yield(e.path, &e.st) })
}

// load is set for a path of a stored index, and del for one gone (kind absent).
func (x *pathIndex) load(p string, s store.FileState) {
	if s.Kind == store.KindAbsent {
		x.del(p)
	} else {
		x.set(p, s)
	}
}

// below calls fn with every path strictly below the folder p, in order.
func (x *pathIndex) below(p string, fn func(q string)) {
	// Every path that starts with "p/" sorts from "p/" up to "p0" ('0' follows '/').
	x.t.AscendRange(entry{path: p + "/"}, entry{path: p + "0"}, func(e entry) bool {
		fn(e.path)
		return true
	})
}

// each calls fn with every path, in order.
func (x *pathIndex) each(fn func(p string, s store.FileState)) {
	x.t.Ascend(func(e entry) bool {
		fn(e.path, e.st)
		return true
	})
}
