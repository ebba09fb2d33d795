package checkpoint

import (
	"slices"
	"testing"

	"github.com/toolsd/toolsd/store"
)

// TestPathIndexRanges: below gives exactly the paths under a folder (not its siblings that
// share its name as a prefix), and after pages through every path in order.
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
	for last := ""; ; {
		n := len(got)
		last = x.after(last, 3, func(q string, _ store.FileState) { got = append(got, q) })
		if len(got)-n < 3 {
			break
		}
	}
	if !slices.Equal(got, all) {
		t.Errorf("paged: %v, want %v", got, all)
	}
	x.del("a/b")
	if _, ok := x.get("a/b"); ok || x.len() != len(all)-1 {
		t.Errorf("after del: len %d", x.len())
	}
}
