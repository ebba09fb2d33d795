// Package cli holds what the toolsd binary's modes share on the command line: flag parsing
// and the logger that the --log-file and --log-level flags describe.
package cli

import (
	"flag"
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

// Parse parses args with fs, which must have ContinueOnError, and refuses positional
// arguments. It returns ok to go on, or the exit code: 0 after -help, 2 for bad flags or an
// unexpected argument (named on stderr with the usage, prefixed by name).
func Parse(fs *flag.FlagSet, args []string, name string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, fs.Arg(0))
		fs.Usage()
		return 2, false
	}
	return 0, true
}
