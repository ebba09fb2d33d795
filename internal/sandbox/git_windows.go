package sandbox

import "os"

// fileIDOf is whether the entry at path exists (not followed), with no identity: Windows
// confines nothing, so no Watch compares one.
func fileIDOf(path string) (fileID, bool) {
	_, err := os.Lstat(path)
	return fileID{}, err == nil
}

// renameAside renames the entry at p to the first free name beside it (quarantineName).
// Windows confines nothing, so no Watch moves anything aside.
func renameAside(p string) (string, error) {
	for n := 1; n < 100; n++ {
		c := quarantineName(p, n)
		if _, err := os.Lstat(c); os.IsNotExist(err) {
			return c, os.Rename(p, c)
		}
	}
	return "", os.ErrExist
}
