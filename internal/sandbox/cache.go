package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Confined commands get build caches of their own (GOCACHE, npm's, pip's, yarn's, the XDG
// cache): the user's caches, which unconfined builds trust, stay out of their reach. Those
// caches are per workspace: a hostile repository's confined build may fill its own cache
// with whatever it likes, but the next project's confined build never reads it (Go trusts
// its build cache's entries; a poisoned entry is a compiled package another build links).

// CacheMaxAge is how long a workspace's sandbox cache is kept after the workspace was last
// opened.
const CacheMaxAge = 30 * 24 * time.Hour

// cacheName is the form of a workspace's cache folder's name: the workspace folder's name
// (for the person who looks) and a hash of its real path (what tells two workspaces apart).
var cacheName = regexp.MustCompile(`^[A-Za-z0-9._-]{0,32}-[0-9a-f]{16}$`)

// CacheKey is the name of workspace's cache folder below the sandbox's cache root: the
// workspace's real path decides it.
func CacheKey(workspace string) string {
	ws := real(workspace)
	sum := sha256.Sum256([]byte(ws))
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, filepath.Base(ws))
	if len(base) > 32 {
		base = base[:32]
	}
	return base + "-" + hex.EncodeToString(sum[:8])
}

// WorkspaceCache makes (or reuses) workspace's cache folder below root and returns it. It
// marks the folder used now, and removes the folders of workspaces that are gone or were not
// opened for CacheMaxAge. Which workspace a folder is for is written beside it
// (KEY.workspace), out of the reach of the commands that write the folder. Anything else in
// root is left alone: the single cache every workspace once shared (root itself was
// XDG_CACHE_HOME) is read by nothing any more, and a toolsd of before may still be using it.
func WorkspaceCache(root, workspace string) (string, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", err
	}
	key := CacheKey(workspace)
	dir := filepath.Join(root, key)
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", err
	}
	if err := os.WriteFile(dir+recordSuffix, []byte(real(workspace)), 0o600); err != nil {
		return "", err
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
	entries, err := os.ReadDir(root)
	if err != nil {
		return dir, nil
	}
	for _, e := range entries {
		name := e.Name()
		if name == key || name == key+recordSuffix {
			continue
		}
		if k, ok := strings.CutSuffix(name, recordSuffix); ok && cacheName.MatchString(k) {
			if _, err := os.Lstat(filepath.Join(root, k)); err != nil {
				_ = os.Remove(filepath.Join(root, name)) // its folder is gone
			}
			continue
		}
		if cacheName.MatchString(name) && e.IsDir() && stale(filepath.Join(root, name), now) {
			_ = os.RemoveAll(filepath.Join(root, name))
			_ = os.Remove(filepath.Join(root, name+recordSuffix))
		}
	}
	return dir, nil
}

// recordSuffix names the file beside a cache folder that says whose it is.
const recordSuffix = ".workspace"

// stale reports whether the cache folder dir can go: its workspace is gone (or unknown), or
// was not opened for CacheMaxAge.
func stale(dir string, now time.Time) bool {
	fi, err := os.Stat(dir)
	if err != nil || now.Sub(fi.ModTime()) >= CacheMaxAge {
		return true
	}
	ws, err := os.ReadFile(dir + recordSuffix)
	if err != nil {
		return true
	}
	_, err = os.Stat(string(ws))
	return err != nil
}
