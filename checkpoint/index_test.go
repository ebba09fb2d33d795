package checkpoint

import (
	"slices"
	"testing"

	"github.com/toolsd/toolsd/store"
)

// TestPathIndexRanges: below gives exactly the paths under a folder (not its siblings that
// share its name as a prefix); a clone yields every path in order, as it was when cloned.
func TestPathIndexRanges(t *testing.T) {
	x := newIndex()
	all := []string{"a", "a b", "a-b", "a.txt", "a/b", "a/b/c", "a/z", "a0", "aa", "b", "b/a"}
	for _, p := range slices.Backward(all) {
		x.set(p, store.FileState{Kind: store.KindFile})
	}
	var got []string
	x.below("a", func(q string) { got = append(got, q) })
	if want := []string{"a/b", "a/b/c", "a/z"}; !slices.Equal(got, want) {
		t.Errorf("below a: %v, want %v", got, want)
	}
	got = nil
	x.below("a/b", func(q string) { got = append(got, q) })
	if want := []string{"a/b/c"}; !slices.Equal(got, want) {
		t.Errorf("below a/b: %v, want %v", got, want)
	}
	got = nil
	snap := x.clone()
	x.del("a/b")
	x.set("c", store.FileState{})
	for p := range snap.ascend {
		got = append(got, p)
	}
	if !slices.Equal(got, all) {
		t.Errorf("the clone: %v, want %v", got, all)
	}
	if _, ok := x.get("a/b"); ok || x.len() != len(all) {
		t.Errorf("after del: len %d", x.len())
	}
}
