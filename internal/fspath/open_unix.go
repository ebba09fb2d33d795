//go:build unix

package fspath

// splitRoot splits the absolute path abs into the root folder it starts from and the
// slash-separated rest.
func splitRoot(abs string) (root, rest string) { return "/", abs[1:] }
