package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/registry"
)

// target is a path argument resolved to what it really names.
type target struct {
	// Given is the path as the model wrote it.
	Given string
	// Abs is the real absolute path: symlinks resolved; for a path that does not exist yet,
	// the deepest existing parent resolved and the rest appended.
	Abs string
	// Rel is Abs relative to the workspace, slash-separated ("." for the workspace itself);
	// empty when Abs is outside.
	Rel string
	// Inside reports whether Abs is the workspace or below it.
	Inside bool
	// Info is Abs's lstat, nil when it does not exist.
	Info fs.FileInfo
}

// Pattern is what the tool's own permission ask names: the workspace-relative path, or the
// absolute (slash) path of something outside.
func (t *target) Pattern() string {
	if t.Inside {
		return t.Rel
	}
	return filepath.ToSlash(t.Abs)
}

// Display is how messages name the path: relative when inside.
func (t *target) Display() string { return t.Pattern() }

// Exists reports whether the target exists.
func (t *target) Exists() bool { return t.Info != nil }

// checkPathText refuses paths a file system call would mangle.
func checkPathText(name, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%s is empty: give a path relative to the workspace or an absolute path", name)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%s contains a NUL byte: paths cannot contain NUL; pass the real file name", name)
	case !utf8.ValidString(p):
		return fmt.Errorf("%s is not valid UTF-8: pass the path as UTF-8 text", name)
	}
	return nil
}

// resolvePath resolves p (relative paths against base, the workspace when base is empty) to
// its real target. It touches nothing but stat calls.
func resolvePath(workspace, base, name, p string) (*target, error) {
	if err := checkPathText(name, p); err != nil {
		return nil, err
	}
	if base == "" {
		base = workspace
	}
	abs := p
	if strings.HasPrefix(abs, "~/") || abs == "~" {
		if home, err := os.UserHomeDir(); err == nil {
			abs = filepath.Join(home, strings.TrimPrefix(abs, "~"))
		}
	}
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, abs)
	}
	abs = filepath.Clean(abs)
	real, info, err := fspath.RealStat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s %q cannot be resolved: %v", name, p, err)
	}
	t := &target{Given: p, Abs: real, Info: info}
	t.Rel, t.Inside = within(workspace, real)
	return t, nil
}

// within reports whether p is ws or below it, and p relative to ws (fspath.Within).
func within(ws, p string) (string, bool) { return fspath.Within(ws, p) }

// askExternal asks external_directory for a target outside the workspace. dirKind says the
// target is itself a folder (list, grep, a workdir) rather than a file in one.
func askExternal(ctx context.Context, call *registry.Call, t *target, dirKind bool) error {
	if r := externalRequest(t, dirKind); r != nil {
		return call.Ask(ctx, *r)
	}
	return nil
}

// externalRequest is the external_directory request for a target outside the workspace
// (nil inside it).
func externalRequest(t *target, dirKind bool) *registry.AskRequest {
	if t.Inside {
		return nil
	}
	dir := t.Abs
	if !dirKind {
		dir = filepath.Dir(t.Abs)
	}
	dir = filepath.ToSlash(dir)
	pattern := strings.TrimSuffix(dir, "/") + "/*"
	return &registry.AskRequest{
		Permission: "external_directory",
		Patterns:   []string{pattern},
		Always:     []string{permission.Escape(strings.TrimSuffix(dir, "/")) + "/*"},
		Metadata:   map[string]any{"folder": dir, "filePath": filepath.ToSlash(t.Abs)},
	}
}

// resolveAndAsk resolves p, asks external_directory when it is outside the workspace, then
// asks perm for it. Ask errors come back unchanged.
func resolveAndAsk(ctx context.Context, call *registry.Call, name, p, perm string, dirKind bool, meta map[string]any) (*target, error) {
	t, err := resolvePath(call.Workspace, "", name, p)
	if err != nil {
		return nil, err
	}
	if dirKind && (t.Info == nil || !t.Info.IsDir()) {
		dirKind = false
	}
	if err := askExternal(ctx, call, t, dirKind); err != nil {
		return nil, err
	}
	if perm != "" {
		if meta == nil {
			meta = map[string]any{"filePath": filepath.ToSlash(t.Abs)}
		}
		if err := call.Ask(ctx, registry.AskRequest{Permission: perm, Patterns: []string{t.Pattern()}, Always: exactly(t.Pattern()), Metadata: meta}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// exactly returns the "always" patterns that allow exactly ps again: their wildcard
// characters escaped, so that remembering a path with a * in its name allows no other.
func exactly(ps ...string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = permission.Escape(p)
	}
	return out
}

// errPathChanged is returned when a path was swapped (a symlink put in place of a file or
// folder on it) between the permission check and the use.
var errPathChanged = errors.New("builtin: the path changed after it was checked (a file or folder on it was replaced by a symbolic link); look at it again, then retry")

// openFlags are the flags every workspace file is opened for reading with: O_NONBLOCK so that
// a FIFO or a device never blocks the open (the file is then checked to be regular).
const openFlags = posix.O_RDONLY | posix.O_NONBLOCK | posix.O_NOCTTY

// pathErr turns a failed open of a checked path into the error to report: errPathChanged
// for a symlink met on the way.
func pathErr(err error) error {
	if errors.Is(err, fspath.ErrSymlink) || errors.Is(err, fspath.ErrNotBeneath) {
		return errPathChanged
	}
	return err
}

// notRegularError is the error of opening a FIFO, socket or device where a file is read.
type notRegularError struct {
	Name string
	Mode fs.FileMode
}

func (e *notRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (it is a %s)", e.Name, fileKind(e.Mode))
}

// openChecked opens the regular file at the real path t.Abs for reading. No symlink is
// followed on the way (fspath.Open), so a file or folder swapped for one after the check
// is refused (errPathChanged); anything but a regular file is refused (*notRegularError)
// without blocking on it.
func openChecked(t *target) (regularFile, fs.FileInfo, error) {
	fd, err := fspath.Open(t.Abs, openFlags)
	if err != nil {
		return regularFile{-1}, nil, pathErr(err)
	}
	fi, err := fspath.Fstat(fd, filepath.Base(t.Abs))
	if err != nil {
		posix.Close(fd)
		return regularFile{-1}, nil, &fs.PathError{Op: "stat", Path: t.Abs, Err: err}
	}
	if !fi.Mode().IsRegular() {
		posix.Close(fd)
		return regularFile{-1}, nil, &notRegularError{t.Display(), fi.Mode()}
	}
	return regularFile{fd}, fi, nil
}

// regularFile is a regular file open for reading, read with plain system calls: an
// *os.File would cost two more per open (asking for the descriptor's flags, and trying to
// add it to the poller, which refuses regular files).
type regularFile struct{ fd int }

func (f regularFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := posix.Read(f.fd, p)
		switch {
		case err == posix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadAt reads len(p) bytes at off, or fewer and an error (io.EOF at the end).
func (f regularFile) ReadAt(p []byte, off int64) (int, error) {
	total := 0
	for len(p) > 0 {
		n, err := posix.Pread(f.fd, p, off)
		switch {
		case err == posix.EINTR:
			continue
		case err != nil:
			return total, err
		case n == 0:
			return total, io.EOF
		}
		total += n
		p = p[n:]
		off += int64(n)
	}
	return total, nil
}

func (f regularFile) Seek(offset int64, whence int) (int64, error) {
	return posix.Seek(f.fd, offset, whence)
}

func (f regularFile) Close() error { return posix.Close(f.fd) }

// openRegular is openChecked with raw system calls, for grep: the fd of the regular file at
// the real path t.Abs, and its fstat.
func openRegular(t *target) (int, *posix.Stat_t, error) {
	fd, err := fspath.Open(t.Abs, openFlags)
	if err != nil {
		return -1, nil, pathErr(unwrapPathErr(err))
	}
	st := new(posix.Stat_t)
	if err := posix.Fstat(fd, st); err != nil {
		posix.Close(fd)
		return -1, nil, err
	}
	if st.Mode&posix.S_IFMT != posix.S_IFREG {
		posix.Close(fd)
		return -1, nil, &notRegularError{t.Display(), fspath.TypeMode(uint32(st.Mode))}
	}
	return fd, st, nil
}

// openDirChecked opens the folder at the real path abs for listing, following no symlink on
// the way.
func openDirChecked(abs string) (*os.File, error) {
	fd, err := fspath.Open(abs, posix.O_RDONLY|posix.O_DIRECTORY)
	if err != nil {
		return nil, pathErr(err)
	}
	return os.NewFile(uintptr(fd), abs), nil
}

// relOrAbs names p for messages: workspace-relative when inside.
func relOrAbs(ws, p string) string {
	if r, ok := within(ws, p); ok {
		return r
	}
	return filepath.ToSlash(p)
}

// notFoundError names a missing path and the closest existing names in its folder.
func notFoundError(ws string, t *target) error {
	dir, base := filepath.Split(t.Abs)
	ents, err := readDirChecked(dir)
	if err != nil {
		// Walk up to the deepest folder that exists.
		d := filepath.Dir(dir)
		for ; d != filepath.Dir(d); d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				break
			}
		}
		return fmt.Errorf("file not found: %s (the folder %s does not exist; the deepest existing folder is %s)", t.Display(), relOrAbs(ws, filepath.Clean(dir)), relOrAbs(ws, d))
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	close := closestNames(base, names, 5)
	if len(close) == 0 {
		return fmt.Errorf("file not found: %s", t.Display())
	}
	for i, n := range close {
		close[i] = relOrAbs(ws, filepath.Join(dir, n))
	}
	return fmt.Errorf("file not found: %s\n\nDid you mean one of these?\n%s", t.Display(), strings.Join(close, "\n"))
}

// readDirChecked lists the folder at the real path abs, following no symlink on the way.
func readDirChecked(abs string) ([]os.DirEntry, error) {
	d, err := openDirChecked(filepath.Clean(abs))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// closestNames returns up to n names like name, closest first.
func closestNames(name string, names []string, n int) []string {
	type cand struct {
		s string
		d int
	}
	ln := strings.ToLower(name)
	stem := strings.TrimSuffix(ln, filepath.Ext(ln))
	var cs []cand
	for _, s := range names {
		ls := strings.ToLower(s)
		d := registry.EditDistance(ln, ls)
		lstem := strings.TrimSuffix(ls, filepath.Ext(ls))
		switch {
		case ls == ln:
			d = 0
		case stem != "" && lstem == stem:
			d = min(d, 1)
		case strings.Contains(ls, ln) || (len(ls) >= 3 && strings.Contains(ln, ls)):
			d = min(d, 2)
		}
		if d <= max(2, len(name)/3) {
			cs = append(cs, cand{s, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].s < cs[j].s
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.s)
	}
	return out
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileKind names what a file mode is, without an article ("socket").
func fileKind(m os.FileMode) string { return strings.TrimPrefix(fsopen.Describe(m), "a ") }
