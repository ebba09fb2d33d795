package attach

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// Paths are the files of one workspace's owner in the runtime folder.
type Paths struct {
	Dir string // the private runtime folder
	// Socket is where the owner listens, user-only: a socket file in Dir on Unix, a named
	// pipe (pipeName) on Windows.
	Socket string
	Lock   string // the owner holds an exclusive lock on it for its whole life
	Log    string // the owner's log when no --log-file names one
}

// PathsFor returns the paths of the owner of folder (its real path), in dir. store is the
// store file when the command line names one explicitly, so that two owners of one folder
// with different stores (tests with private stores) do not meet; empty otherwise.
func PathsFor(dir, folder, store string) (Paths, error) {
	sum := sha256.Sum256([]byte(folder + "\x00" + store))
	name := hex.EncodeToString(sum[:10])
	socket, err := endpoint(dir, name)
	p := Paths{
		Dir:    dir,
		Socket: socket,
		Lock:   filepath.Join(dir, name+".lock"),
		Log:    filepath.Join(dir, name+".log"),
	}
	return p, err
}

// pipeName is the named pipe of the owner called name (PathsFor) for user (a SID string).
// Named pipes share one namespace on the machine, unlike a runtime folder of one's own:
// the user is in the name so that two users' owners of one folder path never meet.
func pipeName(user, name string) string {
	sum := sha256.Sum256([]byte(user + "\x00" + name))
	return `\\.\pipe\toolsd-` + hex.EncodeToString(sum[:16])
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
