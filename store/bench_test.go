package store

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

// lineBlock is 64 KiB of numbered-looking lines ending with "\n".
func lineBlock() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 64<<10-100; i++ {
		fmt.Fprintf(&b, "%08d the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.Bytes()
}

// TestOutputMemoryBounded writes 256 MiB through one OutputWriter and checks that the heap
// stays small the whole time, then reads the last page back.
func TestOutputMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 256 MiB")
	}
	s := openTest(t, nil)
	w, err := s.NewOutput("s", "big")
	if err != nil {
		t.Fatal(err)
	}
	block := lineBlock()
	linesPer := bytes.Count(block, []byte{'\n'})
	const total = 256 << 20
	var ms runtime.MemStats
	peak := uint64(0)
	written, lines := 0, 0
	for written+len(block) <= total {
		if _, err := w.Write(block); err != nil {
			t.Fatal(err)
		}
		written += len(block)
		lines += linesPer
		if (written/len(block))%256 == 0 { // every 16 MiB
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	tail := []byte("last line without newline")
	w.Write(tail)
	written += len(tail)
	lines++
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapInuse)
	t.Logf("wrote %d MiB, peak HeapInuse %.1f MiB", written>>20, float64(peak)/(1<<20))
	if peak > 32<<20 {
		t.Fatalf("peak HeapInuse %d MiB > 32 MiB", peak>>20)
	}
	r, err := s.ReadOutput(w.ID(), lines-3, 100)
	if err != nil {
		t.Fatal(err)
	}
	if r.TotalLines != lines || r.TotalBytes != int64(written) || r.Lines != 3 {
		t.Fatalf("totals %d lines %d bytes (%d returned), want %d, %d", r.TotalLines, r.TotalBytes, r.Lines, lines, written)
	}
	want := strings.Join(strings.Split(string(block), "\n")[linesPer-2:linesPer], "\n") + "\n" + string(tail)
	if r.Content != want {
		t.Fatalf("last page %q, want %q", r.Content, want)
	}
}

// BenchmarkCreateUpdateCall is one tool call's record: create, running, completed.
func BenchmarkCreateUpdateCall(b *testing.B) {
	for _, par := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", par), func(b *testing.B) {
			s := openTest(b, nil)
			var n atomic.Int64
			b.SetParallelism(max(1, par/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprint("c", n.Add(1))
					r := newRec("bench", id)
					if err := s.CreateCall(r); err != nil {
						b.Fatal(err)
					}
					if err := s.UpdateCall("bench", id, func(r *protocol.CallRecord) { r.Status = protocol.StatusRunning }); err != nil {
						b.Fatal(err)
					}
					if err := s.UpdateCall("bench", id, func(r *protocol.CallRecord) {
						r.Status = protocol.StatusCompleted
						r.Output = "hello\n"
					}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkCreateUpdateCallSync is the same with an fsync per commit (Options.Sync).
func BenchmarkCreateUpdateCallSync(b *testing.B) {
	s := openTest(b, &Options{Sync: true})
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprint("c", i)
		if err := s.CreateCall(newRec("bench", id)); err != nil {
			b.Fatal(err)
		}
		for _, st := range []string{protocol.StatusRunning, protocol.StatusCompleted} {
			if err := s.UpdateCall("bench", id, func(r *protocol.CallRecord) { r.Status = st }); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkOutputWrite(b *testing.B) {
	s := openTest(b, nil)
	block := lineBlock()
	const perOp = 16 << 20
	b.SetBytes(perOp)
	for b.Loop() {
		w, err := s.NewOutput("s", "c")
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < perOp; n += len(block) {
			if _, err := w.Write(block); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadOutputTail reads the last 100 lines of a 64 MiB output.
func BenchmarkReadOutputTail(b *testing.B) {
	s := openTest(b, nil)
	w, err := s.NewOutput("s", "c")
	if err != nil {
		b.Fatal(err)
	}
	block := lineBlock()
	for n := 0; n < 64<<20; n += len(block) {
		w.Write(block)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	r, err := s.ReadOutput(w.ID(), 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.ReadOutput(w.ID(), r.TotalLines-100, 100)
		if err != nil || p.Lines != 100 {
			b.Fatal(p, err)
		}
	}
}

// BenchmarkListCalls lists a page of 50 (calls/list's default) from 10,000 calls with
// outputs of a few KiB in their records.
func BenchmarkListCalls(b *testing.B) {
	s := openTest(b, nil)
	out := strings.Repeat("some output line\n", 200)
	for i := range 10000 {
		r := newRec(fmt.Sprint("s", i%10), fmt.Sprint("c", i))
		r.Status, r.Output = protocol.StatusCompleted, out
		if err := s.CreateCall(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		page, _, err := s.ListCalls("s3", 0, "")
		if err != nil || len(page) != DefaultListLimit {
			b.Fatal(len(page), err)
		}
	}
}
