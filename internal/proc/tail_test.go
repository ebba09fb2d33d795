package proc

import "testing"

// TestTail: the end of what was written is kept and all of it counted; a cut inside a
// UTF-8 character does not show its broken start.
func TestTail(t *testing.T) {
	tl := &Tail{Max: 4}
	if _, _, total := tl.Cut(); total != 0 || tl.String() != "" {
		t.Fatalf("empty tail: %q, %d", tl.String(), total)
	}
	tl.Write([]byte("ab"))
	if cut, kept, total := tl.Cut(); cut || kept != 2 || total != 2 || tl.String() != "ab" {
		t.Fatalf("short: %q cut=%v kept=%d total=%d", tl.String(), cut, kept, total)
	}
	tl.Write([]byte("cdé")) // é is two bytes
	tl.Write([]byte("xé"))  // the last 4 bytes are the first é's second byte, "x" and "é"
	if cut, kept, total := tl.Cut(); !cut || kept != 4 || total != 9 {
		t.Fatalf("long: cut=%v kept=%d total=%d", cut, kept, total)
	}
	if got := tl.String(); got != "xé" {
		t.Fatalf("String() = %q, want %q (the cut é's second byte dropped)", got, "xé")
	}
}
