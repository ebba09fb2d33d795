package builtin

import (
	"context"

	"github.com/toolsd/toolsd/internal/fswalk"
)

type (
	walkOptions = fswalk.Options
	walkEntry   = fswalk.Entry
)

// walk is fswalk.Walk with a swapped root reported as errPathChanged.
func walk(ctx context.Context, o walkOptions, visit func(e walkEntry)) error {
	return pathErr(fswalk.Walk(ctx, o, visit))
}

func readRetry(fd int, b []byte) (int, error) { return fswalk.ReadRetry(fd, b) }
