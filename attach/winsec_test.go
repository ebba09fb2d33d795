package attach

import (
	"strings"
	"testing"
)

// Only the same user is admitted; an unknown peer never is.
func TestSameUser(t *testing.T) {
	me := "S-1-5-21-1004336348-1177238915-682003330-1001"
	for _, tc := range []struct {
		peer string
		want bool
	}{
		{me, true},
		{"S-1-5-21-1004336348-1177238915-682003330-1002", false}, // another account of the domain
		{me + "1", false},   // a longer RID
		{"S-1-5-18", false}, // SYSTEM
		{"", false},         // unknown
	} {
		if got := sameUser(me, tc.peer); got != tc.want {
			t.Errorf("sameUser(%q): %v", tc.peer, got)
		}
	}
	if sameUser("", "") {
		t.Error("an unknown user admitted an unknown peer")
	}
}

// The pipe's name depends on the user and on the owner's name, and is a valid pipe path.
func TestPipeName(t *testing.T) {
	a := pipeName("S-1-5-21-1-2-3-1001", "0123456789abcdef0123")
	if !strings.HasPrefix(a, `\\.\pipe\toolsd-`) || len(a) != len(`\\.\pipe\toolsd-`)+32 {
		t.Fatalf("pipe name %q", a)
	}
	if a != pipeName("S-1-5-21-1-2-3-1001", "0123456789abcdef0123") {
		t.Fatal("the name is not stable")
	}
	if a == pipeName("S-1-5-21-1-2-3-1002", "0123456789abcdef0123") {
		t.Fatal("two users' owners of one folder share a pipe name")
	}
	if a == pipeName("S-1-5-21-1-2-3-1001", "0123456789abcdef0124") {
		t.Fatal("two folders share a pipe name")
	}
}

// The security descriptors admit the one SID, and nothing but a SID can enter them.
func TestSDDL(t *testing.T) {
	sid := "S-1-5-21-1004336348-1177238915-682003330-1001"
	if s, err := pipeSDDL(sid); err != nil || s != "D:P(A;;GA;;;"+sid+")" {
		t.Fatalf("pipe: %q, %v", s, err)
	}
	if s, err := folderSDDL(sid); err != nil || s != "O:"+sid+"D:P(A;OICI;FA;;;"+sid+")" {
		t.Fatalf("folder: %q, %v", s, err)
	}
	for _, bad := range []string{"", "WD", "S-1", "S-1-5", sid + ")(A;;GA;;;WD", "S-1-5-21-1\n", "s-1-5-18"} {
		if s, err := pipeSDDL(bad); err == nil {
			t.Errorf("pipeSDDL(%q) = %q", bad, s)
		}
		if s, err := folderSDDL(bad); err == nil {
			t.Errorf("folderSDDL(%q) = %q", bad, s)
		}
	}
}

// The walk up a snapshot's parent pids finds a real ancestor, and stops at a stale link,
// a missing process, a loop (pids reused) and after 64 steps.
func TestWalkParents(t *testing.T) {
	all := func(child, parent uint32) bool { return true }
	parents := map[uint32]uint32{10: 20, 20: 30, 30: 4, 4: 0, 50: 60, 60: 50, 70: 99}
	for _, tc := range []struct {
		pid, ancestor uint32
		linked        func(child, parent uint32) bool
		want          bool
	}{
		{10, 30, all, true},
		{10, 20, all, true},
		{10, 4, all, true},
		{20, 10, all, false}, // a child is not an ancestor
		{10, 77, all, false},
		{50, 77, all, false}, // a loop of reused pids
		{70, 77, all, false}, // a parent not in the snapshot
		{10, 30, func(child, parent uint32) bool { return parent != 30 }, false}, // 30 is younger than 20: a reused pid
		{10, 10, all, false},
	} {
		if got := walkParents(parents, tc.pid, tc.ancestor, tc.linked); got != tc.want {
			t.Errorf("walkParents(%d, %d): %v", tc.pid, tc.ancestor, got)
		}
	}
	chain := map[uint32]uint32{}
	for i := uint32(1); i < 100; i++ {
		chain[i] = i + 1
	}
	if walkParents(chain, 1, 65, all) != true || walkParents(chain, 1, 66, all) != false {
		t.Error("the walk's bound of 64 steps")
	}
}
