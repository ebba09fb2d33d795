//go:build unix

package acp

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fspath"
	"golang.org/x/sys/unix"
)

// fs/read_text_file of a FIFO (which a confined command can make in the workspace) is refused
// at once: opening it for reading would wait for a writer forever, holding one of the
// proxy's slots, and toolsd acp would never exit.
func TestReadLinesRefusesAFIFO(t *testing.T) {
	dir, err := fspath.Real(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readLines(fifo, nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO read: %v, want it refused as not a regular file", err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the open, so that the goroutine ends.
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			_ = unix.Close(fd)
		}
		<-done
		t.Fatal("reading a FIFO waited for a writer")
	}
}
