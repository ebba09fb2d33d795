//go:build !windows

package wine

// Under reports whether the process runs under wine (false on Windows itself and on every
// other system).
func Under() bool { return false }
