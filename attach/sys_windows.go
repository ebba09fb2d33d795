package attach

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// errNoOwner is why a Windows client serves itself: see the package doc ("Windows").
var errNoOwner = errors.New("attach: no shared daemon per workspace on Windows yet; this client serves itself (as --standalone)")

// checkPrivate refuses every runtime folder on Windows, so that Locate fails and each
// client serves itself.
func checkPrivate(dir string) error { return errNoOwner }

// openNoFollow is 0: the lock file is never used on Windows (checkPrivate).
const openNoFollow = 0

func tryLock(f *os.File) (held bool, err error)  { return false, errNoOwner }
func unixRights(in, out *os.File) []byte         { return nil }
func receivedFiles(oob []byte) []*os.File        { return nil }
func detachAttr() *syscall.SysProcAttr           { return nil }
func descends(pid, ancestor int) bool            { return false }
func peerCred(c *net.UnixConn) (int, int, error) { return -1, 0, errNoOwner }

var oobSpace = 0
