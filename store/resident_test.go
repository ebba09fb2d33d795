package store

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mappedRSS returns the resident size of this process's mappings of path (from smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}

// Streaming a large output through the store, and reading all of it back, leaves only a
// bounded part of bbolt's memory map resident.
func TestResidentMappingStaysSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 96 MiB")
	}
	path := filepath.Join(t.TempDir(), "toolsd.db")
	s := openAt(t, path, nil)
	w, err := s.NewOutput("s", "c")
	if err != nil {
		t.Fatal(err)
	}
	line := append(bytes.Repeat([]byte("x"), 99), '\n')
	block := bytes.Repeat(line, 10000) // 1 MB
	const blocks = 96
	var peak int64
	for range blocks {
		if _, err := w.Write(block); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, mappedRSS(t, path))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for off := 0; ; {
		r, err := s.ReadOutput(w.ID(), off, 20000)
		if err != nil {
			t.Fatal(err)
		}
		if r.Lines == 0 {
			break
		}
		off += r.Lines
		peak = max(peak, mappedRSS(t, path))
	}
	t.Logf("peak resident size of the store mapping: %d MiB for %d MiB of output", peak>>20, blocks)
	if peak > 32<<20 {
		t.Fatalf("the store mapping grew to %d MiB resident while %d MiB streamed through it", peak>>20, blocks)
	}
}
