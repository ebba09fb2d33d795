package attach

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// maxSocketPath is the longest path a Unix socket address holds (sun_path less its NUL).
const maxSocketPath = 107

// Paths are the files of one workspace's owner in the runtime folder.
type Paths struct {
	Dir    string // the private runtime folder
	Socket string // the owner's socket, user-only
	Lock   string // the owner holds an exclusive flock on it for its whole life
	Log    string // the owner's log when no --log-file names one
}

// RuntimeDir returns the private folder of sockets and locks: $XDG_RUNTIME_DIR/toolsd, or
// /tmp/toolsd-<uid> when XDG_RUNTIME_DIR is unset, created with mode 0700. It refuses a
// folder that is a symlink, is not ours, or that others may enter.
func RuntimeDir() (string, error) {
	dir := ""
	if base := os.Getenv("XDG_RUNTIME_DIR"); base != "" && filepath.IsAbs(base) {
		dir = filepath.Join(base, "toolsd")
	} else {
		dir = filepath.Join(os.TempDir(), "toolsd-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("attach: creating the runtime folder: %w", err)
	}
	if err := checkPrivate(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// PathsFor returns the paths of the owner of folder (its real path), in dir. store is the
// store file when the command line names one explicitly, so that two owners of one folder
// with different stores (tests with private stores) do not meet; empty otherwise.
func PathsFor(dir, folder, store string) (Paths, error) {
	sum := sha256.Sum256([]byte(folder + "\x00" + store))
	name := hex.EncodeToString(sum[:10])
	p := Paths{
		Dir:    dir,
		Socket: filepath.Join(dir, name+".sock"),
		Lock:   filepath.Join(dir, name+".lock"),
		Log:    filepath.Join(dir, name+".log"),
	}
	if len(p.Socket) > maxSocketPath {
		return p, fmt.Errorf("attach: the socket path %s is longer than a Unix socket address can be (%d bytes); set XDG_RUNTIME_DIR to a shorter folder", p.Socket, maxSocketPath)
	}
	return p, nil
}

// Locate returns the paths of the owner of folder, creating the runtime folder if needed.
// folder must exist; its real path (symlinks resolved) names the owner.
func Locate(folder, store string) (Paths, string, error) {
	real, err := filepath.EvalSymlinks(folder)
	if err != nil {
		return Paths{}, "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return Paths{}, "", err
	}
	dir, err := RuntimeDir()
	if err != nil {
		return Paths{}, "", err
	}
	p, err := PathsFor(dir, real, store)
	return p, real, err
}
