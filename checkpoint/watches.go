package checkpoint

import (
	"context"
	"sync/atomic"

	"github.com/toolsd/toolsd/internal/fswalk"
)

// journalWatches counts what the change journal watches in the workspace ws: its folders
// that are not ignored (the workspace's own included), of entries files and folders.
func journalWatches(ws string) (folders, entries int, err error) {
	var f, e atomic.Int64
	err = fswalk.Walk(context.Background(), fswalk.Options{Root: ws, Workspace: ws, Dirs: true, Links: true}, func(en fswalk.Entry) {
		e.Add(1)
		if en.Dir {
			f.Add(1)
		}
	})
	return int(f.Load()) + 1, int(e.Load()), err
}
