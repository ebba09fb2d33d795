// Package cli holds what the toolsd binary's modes share on the command line: the logger
// that the --log-file and --log-level flags describe.
package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Logger returns a text logger at level ("debug", "info", "warn", "error") writing to file,
// or to stderr when file is empty, the level (which may be changed later), and a function that
// closes the file. Errors name the flag at fault.
func Logger(file, level string, stderr io.Writer) (*slog.Logger, *slog.LevelVar, func(), error) {
	lv := new(slog.LevelVar)
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, nil, fmt.Errorf("--log-level: %v", err)
	}
	out, closeFn := stderr, func() {}
	if file != "" {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--log-file: %v", err)
		}
		out, closeFn = f, func() { _ = f.Close() }
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: lv})), lv, closeFn, nil
}
